package pmi

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		line  string
		cmd   string
		items []item
		bad   bool
	}{
		{"cmd=get_maxes", "get_maxes", nil, false},
		{"cmd=put kvsname=k key=-bcast-1-0 value=segments=2", "put",
			[]item{{"kvsname", "k"}, {"key", "-bcast-1-0"}, {"value", "segments=2"}}, false},
		{"cmd=put kvsname=k key=42-1-key8 value=AAA1LL+/Ir+/  -", "put",
			[]item{{"kvsname", "k"}, {"key", "42-1-key8"}, {"value", "AAA1LL+/Ir+/  -"}}, false},
		{"cmd=put key=a value=", "put", []item{{"key", "a"}, {"value", ""}}, false},
		{"cmd=get  key=a", "get", []item{{"key", "a"}}, false},
		{"cmd=abort exitcode=7", "abort", []item{{"exitcode", "7"}}, false},
		{"cmd=put key", "", nil, true},
		{"cmd=put =x", "", nil, true},
		{"key=a cmd=get", "", nil, true},
		{"", "", nil, true},
	}
	for _, tt := range tests {
		req := parseLine(tt.line)
		if (req.bad != "") != tt.bad || req.cmd != tt.cmd || !tt.bad && !sameItems(req.items, tt.items) {
			t.Errorf("parseLine(%q) = %+v", tt.line, req)
		}
	}
}

func TestParseFrame(t *testing.T) {
	tests := []struct {
		body  string
		cmd   string
		items []item
		bad   bool
	}{
		{"cmd=kvs-fence;", "kvs-fence", nil, false},
		{"cmd=kvs-put;key=k;value=a;;b;;;;c;;;", "kvs-put", []item{{"key", "k"}, {"value", "a;b;;c;"}}, false},
		{"cmd=kvs-put;key=k_nl;value=line1\nline2;", "kvs-put", []item{{"key", "k_nl"}, {"value", "line1\nline2"}}, false},
		{"cmd=kvs-put;key=k;value=hello world x=1;", "kvs-put", []item{{"key", "k"}, {"value", "hello world x=1"}}, false},
		{"cmd=kvs-fence;thrid=0x7ffd7cb88170;\x0037370", "kvs-fence", []item{{"thrid", "0x7ffd7cb88170"}}, false},
		{"cmd=spawn;argv0=a;argv0=b;", "spawn", []item{{"argv0", "a"}, {"argv0", "b"}}, false},
		{"cmd=kvs-get;key=a;trailing", "kvs-get", []item{{"key", "a"}}, false},
		{"cmd=kvs-get;key=a", "kvs-get", []item{{"key", "a"}}, false},
		{"cmd=x;=y;", "", nil, true},
		{"cmd=x;a;b=c;", "", nil, true},
		{"key=a;cmd=x;", "", nil, true},
		{"\x00cmd=x;", "", nil, true},
	}
	for _, tt := range tests {
		req := parseFrame([]byte(tt.body))
		if (req.bad != "") != tt.bad || req.cmd != tt.cmd || !tt.bad && !sameItems(req.items, tt.items) {
			t.Errorf("parseFrame(%q) = %+v", tt.body, req)
		}
	}
}

func sameItems(a, b []item) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func TestCalibrate(t *testing.T) {
	tests := []struct {
		first string
		junk  int
	}{
		{"cmd=fullinit;pmijobid=job7;pmirank=1;threaded=FALSE;", 0},           // Slurm
		{"cmd=fullinit;pmirank=0;threaded=FALSE;\x00\x00\x00\x00\x00\x00", 6}, // MPICH 4.0.2
		{"cmd=fullinit;pmirank=0;threaded=TRUE;;;1;\x00\x00", 6},
		{"cmd=fullinit;pmirank=0;threaded=TRUE;", 0},
		{"cmd=job-getid;", 0}, // not fullinit: take frames as they are
		{"x", 0},
	}
	for _, tt := range tests {
		if got := calibrate([]byte(tt.first)); got != tt.junk {
			t.Errorf("calibrate(%q) = %d, want %d", tt.first, got, tt.junk)
		}
	}
}

// TestNULInValues: a client with exact frame lengths may send any byte in
// a value; for the others a NUL still ends the frame, the defence against
// surplus bytes the calibration missed.
func TestNULInValues(t *testing.T) {
	body, junk := "cmd=allgather;value=a\x00b;;c\x00;", "\x00\x00\x00\x00\x00\x00"
	tests := []struct {
		name, stream, want string
	}{
		{"exact client", fr("cmd=fullinit;pmirank=0;threaded=FALSE;") + fr(body), "a\x00b;c\x00"},
		{"MPICH 4.0.2", fr("cmd=fullinit;pmirank=0;threaded=FALSE;"+junk) + fr(body+junk), "a"},
		{"first frame not fullinit", fr("cmd=job-getid;") + fr(body), "a"},
	}
	for _, tt := range tests {
		rd := newReader(strings.NewReader(tt.stream))
		if _, err := rd.next(); err != nil {
			t.Fatal(err)
		}
		req, err := rd.next()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := req.get("value"); req.cmd != "allgather" || got != tt.want {
			t.Errorf("%s: %+v, want value %q", tt.name, req, tt.want)
		}
	}
}

func TestAbortStatus(t *testing.T) {
	tests := map[string]int{
		"application called MPI_Abort(MPI_COMM_WORLD, 7) - process 0":   7,
		"application called MPI_Abort(comm=0x84000002, 42) - process 3": 42,
		"Fatal error in internal_Init: Other MPI error\n(unknown)":      1,
		"MPI_Abort(MPI_COMM_WORLD)":                                     1,
		"":                                                              1,
	}
	for msg, want := range tests {
		if got := abortStatus(msg); got != want {
			t.Errorf("abortStatus(%q) = %d, want %d", msg, got, want)
		}
	}
}

func TestFrame2(t *testing.T) {
	got := string(frame2("kvs-get-response", "0x7f", "found", "TRUE", "value", "a;b", "rc", "0"))
	want := "59    cmd=kvs-get-response;thrid=0x7f;found=TRUE;value=a;;b;rc=0;"
	if got != want {
		t.Fatalf("frame2 = %q, want %q", got, want)
	}
}

// FuzzReader: whatever bytes a client sends, the reader neither panics nor
// loops: it ends in an error, and what it accepts makes sense.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\n",
		"cmd=put kvsname=k key=a value=x y -\n",
		"mcmd=spawn\nnprocs=2\narg1=child-arg one\nendcmd\n",
		init2 + "44    cmd=fullinit;pmirank=0;threaded=FALSE;\x00\x00\x00\x00\x00\x0020    cmd=kvs-fence;;;1;\x00\x00",
		init2 + fr("cmd=fullinit;pmijobid=job7;pmirank=1;threaded=FALSE;") + fr("cmd=ring;ring-count=1;ring-left=a;ring-right=b;"),
		"   113cmd=x;",
		"abcdef",
		"999999",
		"6     cmd=;;",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := newReader(bytes.NewReader(data))
		for n := 0; ; n++ {
			req, err := rd.next()
			if err != nil {
				return
			}
			if n > len(data) {
				t.Fatalf("%d requests from %d bytes", n, len(data))
			}
			if req.proto != pmi1 && req.proto != pmi2 {
				t.Fatalf("request without protocol: %+v", req)
			}
			if req.bad == "" && req.cmd == "" {
				t.Fatalf("accepted a request without a command: %+v", req)
			}
		}
	})
}

// FuzzFrameRoundTrip: a decoded PMI-2 body, encoded again, decodes to the
// same command and items: the escaping loses nothing.
func FuzzFrameRoundTrip(f *testing.F) {
	f.Add([]byte("cmd=kvs-put;key=k;value=a;;b;;;;c;;;"))
	f.Add([]byte("cmd=kvs-put;key=k_nl;value=line1\nline2;;;1;\x00\x00"))
	f.Add([]byte("cmd=abort;isworld=TRUE;msg=application called MPI_Abort(MPI_COMM_WORLD, 7) - process 0;"))
	f.Fuzz(func(t *testing.T, body []byte) {
		req := parseFrame(body)
		if req.bad != "" {
			return
		}
		var kv []string
		for _, it := range req.items {
			kv = append(kv, it.key, it.value)
		}
		encoded := frame2(req.cmd, "", kv...)
		again := parseFrame(encoded[frameHeader:])
		if again.cmd != req.cmd || !sameItems(again.items, req.items) {
			t.Fatalf("%q decoded to %+v, re-encoded as %q, decoded to %+v", body, req, encoded, again)
		}
		if !strings.HasSuffix(string(encoded), ";") {
			t.Fatalf("frame %q does not end in ';'", encoded)
		}
	})
}
