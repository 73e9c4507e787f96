package guard

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The framing and encoding of the daemon's socket, as the package doc
// specifies them.

// maxDatagram keeps each datagram well under a unix socket's default
// send buffer (about 208 KiB), which bounds a SOCK_SEQPACKET datagram.
const maxDatagram = 32 << 10

// maxFiles is the most descriptors one message passes: stdio and a few
// of the rank's own.
const maxFiles = 64

// The messages' kinds.
const (
	kindStart   = 'S' // daemon → guard: start a rank
	kindKill    = 'K' // daemon → guard: kill one job's ranks and all they started
	kindRunning = 'R' // guard → daemon: a rank runs
	kindFailed  = 'F' // guard → daemon: a rank could not start
	kindExited  = 'X' // guard → daemon: a rank ended
)

// message is a body being written.
type message []byte

func newMessage(kind byte) message { return message{kind} }

func (m message) uint(v uint64) message { return binary.AppendUvarint(m, v) }

func (m message) int(v int) message { return m.uint(uint64(v)) }

func (m message) string(s string) message { return append(m.int(len(s)), s...) }

func (m message) strings(ss []string) message {
	m = m.int(len(ss))
	for _, s := range ss {
		m = m.string(s)
	}
	return m
}

// reader reads a body's fields; the first malformed one sets err and
// every later read returns zero.
type reader struct {
	b   []byte
	err error
}

var errMalformed = errors.New("malformed message")

func (r *reader) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errMalformed
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int() int {
	v := r.uint()
	if v > 1<<31 {
		r.err = errMalformed
		return 0
	}
	return int(v)
}

func (r *reader) string() string {
	n := r.int()
	if n > len(r.b) {
		r.err = errMalformed
		r.b = nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) strings() []string {
	n := r.int()
	if n > len(r.b) { // each string takes at least a byte
		r.err = errMalformed
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

// A socket is one end of the daemon's socket, waited on through the
// runtime's poller. Both processes run on one P (GOMAXPROCS 1): a
// goroutine blocked in recvmsg would hold that P in its system call, and
// a goroutine it had just woken (the reaper, the daemon's loop) would
// wait for the runtime's monitor to take the P back, up to 10 ms later.
type socket struct {
	f   *os.File
	rc  syscall.RawConn
	in  []byte // receive's datagram and control buffers, kept: a node's
	oob []byte // every rank start and report is one (receive has one caller at a time)
}

// newSocket wraps descriptor fd, made non-blocking, and owns it.
func newSocket(fd int, name string) (*socket, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &socket{f: f, rc: rc}, nil
}

// shutdown ends the sending side: the peer reads its end.
func (s *socket) shutdown() {
	s.rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_WR) })
}

func (s *socket) close() { s.f.Close() }

// send writes body as one message, with files on its first datagram.
// The caller keeps the sending side to one goroutine at a time.
func (s *socket) send(body message, files []*os.File) error {
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	for first := true; first || len(body) > 0; first = false {
		n := min(len(body), maxDatagram-1)
		more := byte(0)
		if n < len(body) {
			more = 1
		}
		datagram := append([]byte{more}, body[:n]...)
		var err error
		werr := s.rc.Write(func(fd uintptr) bool {
			err = unix.Sendmsg(int(fd), datagram, oob, nil, unix.MSG_NOSIGNAL)
			return err != unix.EAGAIN
		})
		if err = cmp.Or(werr, err); err != nil {
			return err
		}
		body, oob = body[n:], nil
	}
	return nil
}

// receive reads the next message: its body and the descriptors it
// passed (close-on-exec). At the peer's end it returns io.EOF.
func (s *socket) receive() ([]byte, []*os.File, error) {
	var body []byte
	var files []*os.File
	if s.in == nil {
		s.in, s.oob = make([]byte, maxDatagram), make([]byte, unix.CmsgSpace(4*maxFiles))
	}
	buf, oob := s.in, s.oob
	for {
		n, oobn, flags, err := s.recvmsg(buf, oob)
		if err == nil && n == 0 {
			err = io.EOF
		}
		if err == nil {
			var got []*os.File
			got, err = passedFiles(oob[:oobn], flags)
			files = append(files, got...)
		}
		if err != nil {
			closeFiles(files)
			return nil, nil, err
		}
		body = append(body, buf[1:n]...)
		if buf[0] == 0 {
			return body, files, nil
		}
	}
}

// recvmsg reads one datagram, waiting in the poller for it.
func (s *socket) recvmsg(buf, oob []byte) (n, oobn, flags int, err error) {
	rerr := s.rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, flags, _, err = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	})
	return n, oobn, flags, cmp.Or(rerr, err)
}

// passedFiles are the descriptors a datagram's control data passed.
func passedFiles(oob []byte, flags int) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "passed"))
		}
	}
	if flags&unix.MSG_CTRUNC != 0 {
		closeFiles(files)
		return nil, fmt.Errorf("more than %d descriptors in a message", maxFiles)
	}
	return files, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
