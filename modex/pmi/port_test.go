package pmi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/internal/fdlimit/fdtest"
)

// portJob is a Port whose ids serve the ranks of an in-memory job.
type portJob struct {
	port *Port
	ids  []string // by rank
}

// startPort opens a Port with one id per rank of a job of size ranks;
// owner, if not nil, replaces the lookup of the connecting socket's user.
func startPort(t *testing.T, size int, owner func(local, remote net.Addr) (int, error)) portJob {
	t.Helper()
	p, err := ListenPort(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if owner != nil {
		p.owner = owner
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	job := newMemJob(JobInfo{Size: size, KVSName: "kvs_t"}, nil)
	pj := portJob{port: p}
	for r := range size {
		id, err := p.Expect(func(conn net.Conn) { _ = Serve(ctx, conn, job.rank(r), testLogger(t)) })
		if err != nil {
			t.Fatal(err)
		}
		pj.ids = append(pj.ids, id)
	}
	go p.Serve(ctx)
	return pj
}

// dial connects to the port and sends what a client sends first.
func (pj portJob) dial(t *testing.T, first string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp4", pj.port.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A safety net against a hang, not a measure: every read here is
	// answered at once or refused at once.
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn, first); err != nil {
		t.Fatal(err)
	}
	return conn
}

// initack is the handshake of MPICH's client with PMI_ID=id.
func initack(id string) string { return "cmd=initack pmiid=" + id + "\n" }

// checkServed checks that conn is served as rank of a job of size: the
// initack's four lines, then an ordinary request answered.
func checkServed(t *testing.T, conn net.Conn, rank, size int) {
	t.Helper()
	want := "cmd=initack\ncmd=set size=" + strconv.Itoa(size) + "\ncmd=set rank=" + strconv.Itoa(rank) +
		"\ncmd=set debug=0\n"
	readExactly(t, conn, want)
	if _, err := io.WriteString(conn, "cmd=get_my_kvsname\n"); err != nil {
		t.Fatal(err)
	}
	readExactly(t, conn, "cmd=my_kvsname kvsname=kvs_t\n")
}

func readExactly(t *testing.T, conn net.Conn, want string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != want {
		t.Fatalf("read %q (%v), want %q", got, err, want)
	}
}

// checkRefused checks that the port closed conn without a byte.
func checkRefused(t *testing.T, conn net.Conn) {
	t.Helper()
	got, err := io.ReadAll(conn)
	if len(got) > 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("got %q (%v), want the connection closed unanswered", got, err)
	}
}

// TestPortServesTheRankOfItsID: a connection that presents a rank's id
// is that rank's, served by Serve from the initack on.
func TestPortServesTheRankOfItsID(t *testing.T) {
	pj := startPort(t, 3, nil)
	for _, r := range []int{2, 0} {
		checkServed(t, pj.dial(t, initack(pj.ids[r])), r, 3)
	}
}

// TestPortRefuses: everything but a first line presenting an id the port
// gave out and nobody presented yet is closed unanswered, and leaves the
// ids as they were.
func TestPortRefuses(t *testing.T) {
	pj := startPort(t, 2, nil)
	unknown := unusedID(pj.ids)
	cases := []struct{ name, first string }{
		{"unknown id", initack(unknown)},
		{"id with a leading zero", initack("0" + pj.ids[0])},
		{"id with a sign", initack("+" + pj.ids[0])},
		{"id beyond an int", initack("1" + strings.Repeat("0", 10) + pj.ids[0])},
		{"no id", "cmd=initack\n"},
		{"more than the id", strings.TrimSuffix(initack(pj.ids[0]), "\n") + " pmiid=1\n"},
		{"init instead of initack", "cmd=init pmi_version=1 pmi_subversion=1\n"},
		{"PMI-2 frame", "14    cmd=fullinit;"},
		{"garbage", "\x00\xff hello\n"},
		{"an id too long", initack(strings.Repeat("1", 40))},
		{"closed before a newline", initack(pj.ids[0])[:10]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := pj.dial(t, tc.first)
			if tc.name == "closed before a newline" {
				conn.(*net.TCPConn).CloseWrite()
			}
			checkRefused(t, conn)
		})
	}
	checkServed(t, pj.dial(t, initack(pj.ids[0])), 0, 2)
	t.Run("id already presented", func(t *testing.T) {
		checkRefused(t, pj.dial(t, initack(pj.ids[0])))
	})
	t.Run("forgotten id", func(t *testing.T) {
		pj.port.Forget(pj.ids[1])
		checkRefused(t, pj.dial(t, initack(pj.ids[1])))
	})
}

// unusedID returns a valid id the port did not give out.
func unusedID(ids []string) string {
	for n := 1; ; n++ {
		id := strconv.Itoa(n)
		if !strings.Contains(" "+strings.Join(ids, " ")+" ", " "+id+" ") {
			return id
		}
	}
}

// TestPortRefusesAnotherUser: a socket of another user is closed before
// its id is read, so the id still serves its rank afterwards.
func TestPortRefusesAnotherUser(t *testing.T) {
	other := os.Getuid() + 1
	pj := startPort(t, 1, func(local, remote net.Addr) (int, error) {
		if uid, err := tcpOwner(local, remote); err != nil || uid != os.Getuid() {
			t.Errorf("owner of our own socket: %d, %v", uid, err)
		}
		return other, nil
	})
	checkRefused(t, pj.dial(t, initack(pj.ids[0])))
}

// TestPortRefusesAnotherUserForReal: as root, a client running as nobody
// that presents a valid id is refused, and the id still serves its rank.
func TestPortRefusesAnotherUserForReal(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run a client as another user")
	}
	pj := startPort(t, 1, nil)
	host, port, _ := net.SplitHostPort(pj.port.Addr())
	script := `exec 3<>/dev/tcp/` + host + `/` + port + `; printf '` + initack(pj.ids[0]) + `' >&3; cat <&3`
	cmd := exec.Command("bash", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run() // a reset, the id being unread
	if stdout.Len() > 0 || !strings.Contains(stderr.String(), "reset") && err != nil {
		t.Fatalf("client as nobody read %q (%v, stderr %q); want nothing", stdout.String(), err, stderr.String())
	}
	checkServed(t, pj.dial(t, initack(pj.ids[0])), 0, 1)
}

// TestSocketOwner reads the uid column of the socket with both ends
// right, from lines as Linux writes them on a little-endian host.
func TestSocketOwner(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the table below is a little-endian host's")
	}
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1
`
	addr := func(port int) net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }
	uid, err := socketOwner(strings.NewReader(table), addr(0xD431), addr(0x1F90))
	if err != nil || uid != 1000 {
		t.Errorf("client socket: uid %d, %v; want 1000", uid, err)
	}
	if _, err := socketOwner(strings.NewReader(table), addr(0xD432), addr(0x1F90)); !errors.Is(err, errNoSocket) {
		t.Errorf("a socket not in the table: %v, want errNoSocket", err)
	}
}

// TestPortOutOfDescriptors: a port whose process has no descriptor left
// for a rank's connection stops serving and says why, rather than leave
// the rank waiting for an answer that never comes.
func TestPortOutOfDescriptors(t *testing.T) {
	p, err := ListenPort(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background()) }()
	fdtest.Exhaust(t, 1) // for the rank's socket
	conn, err := net.Dial("tcp4", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	select {
	case err := <-served:
		if !errors.Is(err, syscall.EMFILE) {
			t.Errorf("Serve with no descriptor left: %v, want EMFILE", err)
		}
	case <-time.After(30 * time.Second): // a bound on a hang
		t.Fatal("Serve still accepting 30 s after the process ran out of descriptors")
	}
}
