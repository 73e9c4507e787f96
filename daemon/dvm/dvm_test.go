package dvm

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"prsh/daemon/protocol"
	"prsh/iof"
)

// TestPlace: a job planned over the client's hosts lands on the DVM's
// daemons by node name; a node outside the DVM, or one it lost, is named.
func TestPlace(t *testing.T) {
	dvmHosts := []string{"login", "n1", "n2", "n3"}
	app := protocol.Launch{RankNode: protocol.RankMap{1, 1, 2}}
	got, err := Place(app, []string{"here", "n3", "n1"}, dvmHosts, []string{"n2"})
	if err != nil || !slices.Equal(got.RankNode, protocol.RankMap{3, 3, 1}) {
		t.Errorf("Place = %v, %v; want [3 3 1]", got.RankNode, err)
	}
	_, err = Place(app, []string{"here", "n9", "n1"}, dvmHosts, nil)
	if err == nil || !strings.Contains(err.Error(), "n9 is not a node of the DVM") {
		t.Errorf("a host outside the DVM: %v", err)
	}
	_, err = Place(app, []string{"here", "n3", "n2"}, dvmHosts, []string{"n2"})
	if err == nil || err.Error() != "rank 2 is placed on n2, which the DVM lost" {
		t.Errorf("a host the DVM lost: %v", err)
	}
}

// TestResolve: a URI as it is; a file's URI; a file without one.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "uri")
	if err := WriteURIFile(file, "unix:/x/dvm.sock"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("the URI file's mode is %v, want 0600", fi.Mode().Perm())
	}
	for arg, want := range map[string]string{"unix:/a/b": "unix:/a/b", file: "unix:/x/dvm.sock"} {
		if got, err := Resolve(arg); got != want || err != nil {
			t.Errorf("Resolve(%s) = %q, %v; want %q", arg, got, err, want)
		}
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("tcp://1.2.3.4:5"), 0o600)
	for _, arg := range []string{junk, filepath.Join(dir, "none")} {
		if _, err := Resolve(arg); err == nil {
			t.Errorf("Resolve(%s) took it", arg)
		}
	}
}

// TestCheckUID: only the DVM's own user is served.
func TestCheckUID(t *testing.T) {
	if checkUID(1000, 1000) != nil || checkUID(1001, 1000) == nil || checkUID(0, 1000) == nil {
		t.Error("checkUID must take only the same uid")
	}
}

// TestFrames: output chunks (a child job's with its number) and JSON
// frames cross a connection whole.
func TestFrames(t *testing.T) {
	a, b := net.Pipe()
	ca, cb := NewConn(a), NewConn(b)
	chunks := []iof.Chunk{
		{Rank: 70000, Stream: iof.Stderr, Data: []byte("hello\n")}, {Rank: 3, Stream: iof.Stdout, EOF: true},
		{Job: 2, Rank: 1, Stream: iof.Stdout, Data: []byte("child\n")}, {Job: 2, Rank: 1, Stream: iof.Stdout, EOF: true},
	}
	go func() {
		for _, c := range chunks {
			ca.WriteOutput(c)
		}
		ca.WriteJSON(KindStatus, Status{Status: 3})
	}()
	for _, want := range chunks {
		kind, payload, err := cb.Read()
		if err != nil {
			t.Fatal(err)
		}
		got, err := OutputChunk(kind, payload)
		if err != nil || got.Job != want.Job || got.Rank != want.Rank || got.Stream != want.Stream || string(got.Data) != string(want.Data) || got.EOF != want.EOF {
			t.Errorf("got %+v (%v), want %+v", got, err, want)
		}
	}
	var s Status
	if err := cb.ReadJSON(KindStatus, &s); err != nil || s.Status != 3 {
		t.Errorf("status %+v, %v", s, err)
	}
}

// TestListener: the socket's directory is the user's alone, a client of
// the same user gets the Hello, and Close removes the directory.
func TestListener(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ln, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(strings.TrimPrefix(ln.URI(), scheme))
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the socket's directory: %v, %v; want mode 0700", fi, err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.WriteJSON(KindHello, Hello{Version: Version, Hosts: []string{"login", "n1"}})
		}
	}()
	conn, hello, err := Dial(ln.URI())
	if err != nil || !slices.Equal(hello.Hosts, []string{"login", "n1"}) {
		t.Fatalf("Dial: %+v, %v", hello, err)
	}
	conn.Close()
	ln.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", dir, err)
	}
}

// TestListenerRefusesOtherUsers: with the directory opened to everyone,
// the peer's uid still keeps another user out: its connection is closed
// unread, where the DVM's own user gets the Hello. Needs root (to be
// another user) and python3 (a client that is not this process).
func TestListenerRefusesOtherUsers(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); os.Getuid() != 0 || err != nil {
		t.Skip("needs root and " + python)
	}
	open, err := os.MkdirTemp("", "dvm-open-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(open)
	os.Chmod(open, 0o755)
	t.Setenv("XDG_RUNTIME_DIR", open)
	ln, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sock := strings.TrimPrefix(ln.URI(), scheme)
	os.Chmod(filepath.Dir(sock), 0o755)
	os.Chmod(sock, 0o777)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.WriteJSON(KindHello, Hello{Version: Version})
			c.Close()
		}
	}()
	heard := func(uid uint32) string {
		cmd := exec.Command(python, "-c", `import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(len(s.recv(100)))`, sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("uid %d: %v: %s", uid, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := heard(0); got == "0" {
		t.Error("the DVM's own user got no Hello")
	}
	if got := heard(65534); got != "0" {
		t.Errorf("uid 65534 read %s bytes, want the connection closed unread", got)
	}
}

func TestLogPath(t *testing.T) {
	if got, want := LogPath("unix:/run/user/1000/prsh-dvm-123/dvm.sock"), "/run/user/1000/prsh-dvm-123.log"; got != want {
		t.Errorf("LogPath = %q, want %q", got, want)
	}
}
