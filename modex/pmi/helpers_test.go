package pmi

import (
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// testLogger sends Serve's log lines to the test's log.
func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "pmi", Level: hclog.Debug, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// socketPair connects a client and a server end the way a rank's PMI_FD
// is connected. Unlike net.Pipe it buffers, so a client may send requests
// ahead of reading replies, as the non-blocking extensions do.
func socketPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "pmi")
		defer f.Close() // FileConn dups it
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}
