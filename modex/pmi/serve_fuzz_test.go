package pmi

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"prsh/modex"
)

// nopBackend answers everything at once, so that a fuzzed conversation
// can only hang if Serve itself does.
type nopBackend struct{}

func (nopBackend) Info() JobInfo {
	return JobInfo{Size: 2, KVSName: "kvs_f", UniverseSize: 2, ProcessMapping: "(vector,(0,1,2))"}
}
func (nopBackend) Put(string, string) error      { return nil }
func (nopBackend) Fence(context.Context) error   { return nil }
func (nopBackend) Get(key string) (string, bool) { return key + " value", len(key)%2 == 0 }
func (nopBackend) PutNodeAttr(string, string)    {}
func (nopBackend) Abort(int, string)             {}
func (nopBackend) Finalize()                     {}
func (nopBackend) NodeAttr(_ context.Context, key string, _ bool) (string, bool) {
	return key, len(key)%2 == 1
}
func (nopBackend) Spawn(context.Context, modex.SpawnRequest) (string, error) {
	return "kvs_child", nil
}
func (nopBackend) Publish(context.Context, string, string) error { return nil }
func (nopBackend) Unpublish(context.Context, string) error       { return nil }
func (nopBackend) Lookup(_ context.Context, service string) (string, error) {
	if len(service)%2 == 1 {
		return "", ErrNotPublished
	}
	return service + "-port", nil
}
func (nopBackend) Allgather(_ context.Context, value string) ([]string, error) {
	return []string{value, "other"}, nil
}
func (nopBackend) Ring(_ context.Context, count int, left, right string) (Ring, error) {
	return Ring{Count: count, Left: right, Right: left}, nil
}

// FuzzServe: whatever a client sends, Serve neither panics nor hangs: once
// the client has closed its end, Serve returns.
func FuzzServe(f *testing.F) {
	scripts, _ := filepath.Glob("testdata/*.script")
	for _, p := range scripts { // the client side of every script, all ranks in one stream
		f.Add(clientBytes(f, p))
	}
	f.Add([]byte("cmd=abort exitcode=3\ncmd=get_maxes\n"))
	f.Add([]byte(init2 + fr("cmd=fullinit;threaded=TRUE;") + fr("cmd=info-getnodeattr;key=k;wait=TRUE;")))
	f.Add([]byte(init2 + fr("cmd=fullinit;threaded=FALSE;") + fr("cmd=allgather;value=a\x00;;b;") + fr("cmd=allgather;")))
	f.Add([]byte("mcmd=spawn\nnprocs=1\nexecname=a\ntotspawns=3\nspawnssofar=1\nendcmd\ncmd=lookup_name service=ab\n" +
		"mcmd=spawn\nnprocs=1\nexecname=a\ntotspawns=3\nspawnssofar=2\narg1=x\nendcmd\n"))
	f.Add([]byte(init2 + fr("cmd=fullinit;threaded=FALSE;") +
		fr("cmd=spawn;thrid=1;ncmds=2;preputcount=1;ppkey0=k;ppval0=v;subcmd=a;maxprocs=1;argc=1;argv0=x;subcmd=b;maxprocs=2;") +
		fr("cmd=name-publish;name=n;port=p;") + fr("cmd=name-lookup;name=n;")))
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		served := make(chan error, 1)
		go func() { served <- Serve(ctx, server, nopBackend{}, nil) }()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		go func() {
			_, _ = client.Write(data)
			client.Close()
		}()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatalf("Serve still running after the client closed, input %q", clip(string(data)))
		}
	})
}

// clientBytes concatenates what the clients of a script send.
func clientBytes(f *testing.F, path string) []byte {
	sc := readScript(f, path)
	var out []byte
	for _, steps := range sc.ranks {
		for _, s := range steps {
			if s.op == "->" && !s.isEOF {
				out = append(out, s.arg...)
			}
		}
	}
	if len(out) == 0 {
		f.Fatalf("%s: nothing sent", path)
	}
	return out
}
