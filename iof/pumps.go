package iof

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Pumps reads the output pipes of many ranks from one goroutine, as Pump
// does each: a goroutine and a buffer per pipe cost a daemon of 256 ranks
// about 4 MB. The goroutine waits on an epoll instance of its own, which
// the runtime's poller watches like any descriptor, so no thread is held
// while the pipes are quiet; it runs while there are pipes to read.
type Pumps struct {
	mu    sync.Mutex
	ep    *os.File        // the epoll instance, while the loop runs
	epfd  int             // its descriptor (Fd would make it blocking)
	pipes map[int]*pumped // by descriptor
}

// pumped is one pipe being read.
type pumped struct {
	sink   Sink
	rank   int
	stream Stream
	pipe   *os.File
	fd     int
	failed error // the sink's error: the rest of the pipe is read and dropped
	done   func(error)
}

// NewPumps makes a reader of pipes; it runs no goroutine until a pipe
// is added.
func NewPumps() *Pumps { return &Pumps{pipes: map[int]*pumped{}} }

// Add reads pipe (non-blocking, as os.Pipe makes it) into sink until
// EOF, as Pump does, then calls done, on a goroutine of its own, with what Pump would
// return; the pipe is the caller's to close then. An error means the
// pipe is not read.
func (p *Pumps) Add(sink Sink, rank int, stream Stream, pipe *os.File, done func(error)) error {
	q := &pumped{sink: sink, rank: rank, stream: stream, pipe: pipe, fd: -1, done: done}
	if rc, err := pipe.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { q.fd = int(fd) }) // Fd() would make it blocking
	}
	if q.fd < 0 {
		return fmt.Errorf("iof: pipe of rank %d has no descriptor", rank)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ep == nil {
		ep, epfd, err := newEpoll()
		if err != nil {
			return err
		}
		p.ep, p.epfd = ep, epfd
		go p.loop(ep)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(q.fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, q.fd, &ev); err != nil {
		return fmt.Errorf("iof: epoll: %w", err)
	}
	p.pipes[q.fd] = q
	return nil
}

// newEpoll makes an epoll instance that the runtime's poller can watch.
func newEpoll() (*os.File, int, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, -1, fmt.Errorf("iof: epoll: %w", err)
	}
	return os.NewFile(uintptr(fd), "pumps"), fd, nil
}

// loop reads the ready pipes, one read of each per round, until none is
// ready, then waits for the runtime's poller to see one; it ends when no
// pipe is left.
func (p *Pumps) loop(ep *os.File) {
	defer ep.Close()
	rc, err := ep.SyscallConn()
	if err != nil {
		panic(err) // an *os.File always has one
	}
	events := make([]unix.EpollEvent, 64)
	buf := make([]byte, ChunkSize)
	rc.Read(func(fd uintptr) bool {
		for {
			n, err := unix.EpollWait(int(fd), events, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			for _, ev := range events[:max(n, 0)] {
				p.readOnce(int(ev.Fd), buf)
			}
			if n > 0 {
				continue
			}
			return p.idle(ep)
		}
	})
}

// idle ends the loop of ep if no pipe is left; a later Add starts
// another.
func (p *Pumps) idle(ep *os.File) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pipes) > 0 {
		return false
	}
	if p.ep == ep {
		p.ep = nil
	}
	return true
}

// readOnce reads what pipe fd holds, at most a chunk, and sends it.
func (p *Pumps) readOnce(fd int, buf []byte) {
	p.mu.Lock()
	q := p.pipes[fd]
	p.mu.Unlock()
	if q == nil {
		return
	}
	n, err := unix.Read(fd, buf)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
	case n > 0:
		if q.failed == nil {
			q.failed = q.sink.Send(Chunk{Rank: q.rank, Stream: q.stream, Data: buf[:n]})
		}
	default: // EOF; a read error counts as one
		p.remove(q)
	}
}

// remove stops watching a pipe read to its end, before its owner may
// close it, and sends its EOF.
func (p *Pumps) remove(q *pumped) {
	p.mu.Lock()
	delete(p.pipes, q.fd)
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, q.fd, nil)
	p.mu.Unlock()
	err := q.failed
	if err == nil {
		err = q.sink.Send(Chunk{Rank: q.rank, Stream: q.stream, EOF: true})
	}
	go q.done(err)
}
