package iof

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pumpedPipe is a pipe added to Pumps: its write end, and what done got.
type pumpedPipe struct {
	w    *os.File
	done chan error
}

func addPipes(t *testing.T, p *Pumps, sink Sink, n int) []pumpedPipe {
	t.Helper()
	pipes := make([]pumpedPipe, n)
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		if err := p.Add(sink, i, Stdout, r, func(err error) { r.Close(); done <- err }); err != nil {
			t.Fatalf("Add: %v", err)
		}
		pipes[i] = pumpedPipe{w: w, done: done}
	}
	return pipes
}

func awaitDone(t *testing.T, pp pumpedPipe) error {
	t.Helper()
	select {
	case err := <-pp.done:
		return err
	case <-time.After(patience):
		t.Fatal("a pipe closed by its writer was not read to its end")
		return nil
	}
}

// TestPumpsManyPipes: each pipe's bytes reach the sink in order, then
// its EOF, once; the pipes are read by one goroutine, whatever their
// number, and it ends with the last pipe.
func TestPumpsManyPipes(t *testing.T) {
	const n = 100
	before := runtime.NumGoroutine()
	var sink collector
	p := NewPumps()
	pipes := addPipes(t, p, &sink, n)
	if got := runtime.NumGoroutine() - before; got > 1 {
		t.Errorf("%d goroutines for %d pipes, want 1", got, n)
	}
	text := func(i int) string { return strings.Repeat(fmt.Sprintf("rank %d\n", i), 20_000) } // several chunks
	for i, pp := range pipes {
		go func() {
			pp.w.WriteString(text(i))
			pp.w.Close()
		}()
	}
	for i, pp := range pipes {
		if err := awaitDone(t, pp); err != nil {
			t.Errorf("pipe %d: %v", i, err)
		}
	}
	got := make([]strings.Builder, n)
	ended := make([]int, n)
	for _, c := range sink.chunks {
		if ended[c.Rank] > 0 {
			t.Fatalf("rank %d: a chunk after its EOF", c.Rank)
		}
		if c.EOF {
			ended[c.Rank]++
		}
		got[c.Rank].Write(c.Data)
	}
	for i := range got {
		if got[i].String() != text(i) || ended[i] != 1 {
			t.Errorf("rank %d: %d bytes and %d EOF, want %d bytes in order and one EOF", i, got[i].Len(), ended[i], len(text(i)))
		}
	}
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the done callbacks' goroutines return
	}
	if got := runtime.NumGoroutine() - before; got > 0 {
		t.Errorf("%d goroutines left once every pipe ended, want none", got)
	}
}

// TestPumpsSinkFails: a failed sink still has its pipe drained, so the
// rank is not left blocked, and done gets the sink's error.
func TestPumpsSinkFails(t *testing.T) {
	sink := &collector{fail: errBroken}
	pipes := addPipes(t, NewPumps(), sink, 1)
	wrote := make(chan error, 1)
	go func() {
		_, err := pipes[0].w.Write(make([]byte, 4<<20)) // far more than a pipe holds
		pipes[0].w.Close()
		wrote <- err
	}()
	if err := awaitDone(t, pipes[0]); !errors.Is(err, errBroken) {
		t.Errorf("done got %v, want the sink's error", err)
	}
	if err := <-wrote; err != nil {
		t.Errorf("the writer got %v, want its data drained", err)
	}
	if len(sink.chunks) != 1 {
		t.Errorf("%d chunks sent to a failed sink, want 1", len(sink.chunks))
	}
}

// TestPumpsRestart: pipes added after the loop ended for want of pipes
// are read by a new one.
func TestPumpsRestart(t *testing.T) {
	var sink collector
	p := NewPumps()
	for round := range 3 {
		pipes := addPipes(t, p, &sink, 2)
		for _, pp := range pipes {
			pp.w.WriteString("x")
			pp.w.Close()
		}
		for _, pp := range pipes {
			if err := awaitDone(t, pp); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	if len(sink.chunks) != 12 {
		t.Errorf("%d chunks, want 12 (a byte and an EOF for each of 6 pipes)", len(sink.chunks))
	}
}

// TestPumpsAwait: ready is called once a socket has something to read,
// and once it is closed unused; cancel before then stops the wait and
// says so, and after then says it came too late.
func TestPumpsAwait(t *testing.T) {
	p := NewPumps()
	socket := func() (ours, theirs *net.UnixConn) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		conn := func(fd int) *net.UnixConn {
			f := os.NewFile(uintptr(fd), "socket")
			defer f.Close()
			c, err := net.FileConn(f)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c.(*net.UnixConn)
		}
		return conn(fds[0]), conn(fds[1])
	}
	await := func(conn *net.UnixConn) (chan struct{}, func() bool) {
		ready := make(chan struct{}, 2)
		cancel, err := p.Await(conn, func() { ready <- struct{}{} })
		if err != nil {
			t.Fatal(err)
		}
		return ready, cancel
	}
	spoken, speaker := socket()
	speaker.Write([]byte("cmd=init\n")) // before the wait: the loop must see it still
	closed, closer := socket()
	waiting, _ := socket()
	readyOnWord, cancelOnWord := await(spoken)
	readyOnClose, _ := await(closed)
	readyNever, cancelNever := await(waiting)
	closer.Close()
	for name, ready := range map[string]chan struct{}{"written to": readyOnWord, "closed": readyOnClose} {
		select {
		case <-ready:
		case <-time.After(patience):
			t.Fatalf("a socket %s was not found ready", name)
		}
	}
	if cancelOnWord() {
		t.Error("cancel after ready says it stopped the wait")
	}
	if !cancelNever() {
		t.Error("cancel of a quiet socket says it came too late")
	}
	select {
	case <-readyNever:
		t.Error("ready called for a quiet socket")
	default:
	}
}
