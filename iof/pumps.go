package iof

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pumps reads the output pipes of many ranks from one goroutine, as Pump
// does each: a goroutine and a buffer per pipe cost a daemon of 256 ranks
// about 4 MB. The same goroutine waits for the first word on sockets
// that most ranks never use (Await). It waits on an epoll instance of its
// own, which the runtime's poller watches like any descriptor, so no
// thread is held while all is quiet; it runs while it has descriptors.
type Pumps struct {
	mu      sync.Mutex
	ep      *os.File    // the epoll instance, while the loop runs
	epfd    int         // its descriptor (Fd would make it blocking)
	watched map[int]any // *pumped or *awaited, by descriptor
	buf     []byte      // the loop's read buffer, kept for the next loop: a loop ends whenever nothing is watched, as often as every rank's end
}

// pumped is one pipe being read.
type pumped struct {
	sink   Sink
	rank   int
	stream Stream
	fd     int
	failed error // the sink's error: the rest of the pipe is read and dropped
	done   func(error)
}

// awaited is a socket whose first word, or end, is awaited.
type awaited struct{ ready func() }

// NewPumps makes a reader of pipes; it runs no goroutine until a pipe
// is added.
func NewPumps() *Pumps { return &Pumps{watched: map[int]any{}} }

// Add reads pipe (non-blocking, as os.Pipe makes it) into sink until
// EOF, as Pump does, then calls done, on a goroutine of its own, with
// what Pump would return; the pipe is the caller's to close then. An
// error means the pipe is not read.
func (p *Pumps) Add(sink Sink, rank int, stream Stream, pipe *os.File, done func(error)) error {
	fd, err := descriptor(pipe)
	if err != nil {
		return fmt.Errorf("iof: pipe of rank %d: %w", rank, err)
	}
	return p.watch(fd, &pumped{sink: sink, rank: rank, stream: stream, fd: fd, done: done})
}

// Await calls ready once conn has something to read, has ended or
// failed, unless cancel, which says whether it did, is called first.
// ready runs on the loop's goroutine: it must not block. conn must stay
// open until then.
func (p *Pumps) Await(conn syscall.Conn, ready func()) (cancel func() bool, err error) {
	fd, err := descriptor(conn)
	if err != nil {
		return nil, fmt.Errorf("iof: %w", err)
	}
	a := &awaited{ready: ready}
	if err := p.watch(fd, a); err != nil {
		return nil, err
	}
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.forget(fd, a)
	}, nil
}

// descriptor is conn's, left non-blocking (Fd would change that).
func descriptor(conn syscall.Conn) (int, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return -1, err
	}
	return fd, nil
}

// watch adds fd to the epoll instance, starting the loop if it does not
// run.
func (p *Pumps) watch(fd int, e any) error {
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
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("iof: epoll: %w", err)
	}
	p.watched[fd] = e
	return nil
}

// forget stops watching fd if e is still what is watched there, before
// its owner may close it. Called under the lock.
func (p *Pumps) forget(fd int, e any) bool {
	if p.watched[fd] != e {
		return false
	}
	delete(p.watched, fd)
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	return true
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

// loop serves the ready descriptors, one read of each pipe per round,
// until none is ready, then waits for the runtime's poller to see one
// (which forgets what was ready before it waits: hence the look first);
// it ends when nothing is left to watch.
func (p *Pumps) loop(ep *os.File) {
	defer ep.Close()
	rc, err := ep.SyscallConn()
	if err != nil {
		panic(err) // an *os.File always has one
	}
	events := make([]unix.EpollEvent, 64)
	p.mu.Lock()
	buf := p.buf
	p.buf = nil
	p.mu.Unlock()
	if buf == nil {
		buf = make([]byte, ChunkSize)
	}
	defer func() {
		p.mu.Lock()
		p.buf = buf
		p.mu.Unlock()
	}()
	rc.Read(func(fd uintptr) bool {
		for {
			n, err := unix.EpollWait(int(fd), events, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			for _, ev := range events[:max(n, 0)] {
				p.serve(int(ev.Fd), buf)
			}
			if n > 0 {
				continue
			}
			return p.idle(ep)
		}
	})
}

// idle ends the loop of ep if nothing is left to watch; a later watch
// starts another.
func (p *Pumps) idle(ep *os.File) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.watched) > 0 {
		return false
	}
	if p.ep == ep {
		p.ep = nil
	}
	return true
}

// serve handles a ready descriptor.
func (p *Pumps) serve(fd int, buf []byte) {
	p.mu.Lock()
	e := p.watched[fd]
	a, awaiting := e.(*awaited)
	awaiting = awaiting && p.forget(fd, a)
	p.mu.Unlock()
	if awaiting {
		a.ready()
	} else if q, ok := e.(*pumped); ok {
		p.readOnce(q, buf)
	}
}

// readOnce reads what a pipe holds, at most a chunk, and sends it.
func (p *Pumps) readOnce(q *pumped, buf []byte) {
	n, err := unix.Read(q.fd, buf)
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
	case n > 0:
		if q.failed == nil {
			q.failed = q.sink.Send(Chunk{Rank: q.rank, Stream: q.stream, Data: buf[:n]})
		}
	default: // EOF; a read error counts as one
		p.mu.Lock()
		p.forget(q.fd, q)
		p.mu.Unlock()
		err := q.failed
		if err == nil {
			err = q.sink.Send(Chunk{Rank: q.rank, Stream: q.stream, EOF: true})
		}
		go q.done(err)
	}
}
