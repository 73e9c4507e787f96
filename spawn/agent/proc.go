package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/ssh"
)

// This file is the part the three agents share: the stdin discipline, the
// stderr tail and the translation of exit results into *ExitError.

const (
	// stderrTail is how much of a command's stderr ExitError keeps: enough
	// for a shell's "not found" or a few lines of a daemon's last words.
	stderrTail = 4 << 10
	// maxLogLine bounds one debug log line of command output.
	maxLogLine = 1 << 10
)

var (
	// closeGrace is how long Close lets a command end by itself after its
	// stdin closed, so that Wait still sees a real exit status, before it
	// kills the command or drops the connection.
	closeGrace = 2 * time.Second
	// waitDelay bounds how long exec waits for a dead command's output
	// pipes to close, in case it left a child behind holding them.
	waitDelay = 2 * time.Second
)

// proc is the Process of all three agents: the agent supplies the command's
// stdin, a function that blocks until the command ends and one that ends it
// forcibly; proc owns the goroutine that waits.
type proc struct {
	stdin  io.WriteCloser
	stderr *tail
	stdout *signOfLife
	stop   func()
	kill   func() // kills a command that cannot end by itself

	done chan struct{} // closed once err is set
	err  error

	closeOnce sync.Once
	closeErr  error
}

// newProc starts the reaper goroutine, which ends when wait returns: by
// itself, or because Close called stop.
func newProc(stdin io.WriteCloser, stderr *tail, stdout *signOfLife, wait func() error, stop, kill func()) *proc {
	p := &proc{stdin: stdin, stderr: stderr, stdout: stdout, stop: stop, kill: kill, done: make(chan struct{})}
	go p.reap(wait)
	return p
}

func (p *proc) reap(wait func() error) {
	err := wait()
	p.err = exitError(err, p.stderr.String())
	close(p.done)
}

// Alive implements Process.
func (p *proc) Alive() <-chan struct{} { return p.stdout.alive }

// Wait implements Process.
func (p *proc) Wait() error {
	<-p.done
	return p.err
}

// Close implements Process.
func (p *proc) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(closeGrace) })
	return p.closeErr
}

// Kill implements Process: the kill, then Close's grace, so that Wait
// sees the command killed when the agent could reach it.
func (p *proc) Kill() error {
	p.closeOnce.Do(func() {
		p.kill()
		p.closeErr = p.shutdown(closeGrace)
	})
	return p.closeErr
}

// abort ends the command at once; used when Start fails half-way.
func (p *proc) abort() {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(0) })
}

// shutdown closes stdin, gives the command grace to end, then stops it. A
// stdin close error only counts while the command still runs: afterwards
// the pipe may legitimately be gone already.
func (p *proc) shutdown(grace time.Duration) error {
	err := p.stdin.Close()
	if p.ended(grace) {
		err = nil
	}
	p.stop()
	<-p.done
	if err != nil {
		return fmt.Errorf("close stdin: %w", err)
	}
	return nil
}

// ended reports whether the command ends within d.
func (p *proc) ended(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// feed writes the launch payload to stdin, bounded by ctx. When the write
// fails the command is closed, and its exit error is returned if it has one:
// "exit status 127: …orted: not found" tells more than "broken pipe". A
// command that ended successfully before its payload was written (the
// reaper closes the pipe) is no failure of the start: Wait says how it
// ended.
func (p *proc) feed(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	errc := make(chan error, 1)
	go func() { // ends when the write does; abort makes sure it does
		_, err := p.stdin.Write(data)
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil {
			return nil
		}
		p.Close()
		werr := p.Wait()
		var xe *ExitError
		switch {
		case errors.As(werr, &xe):
			return xe
		case werr == nil && errors.Is(err, os.ErrClosed):
			return nil
		}
		return fmt.Errorf("write stdin: %w", err)
	case <-ctx.Done():
		p.abort()
		<-errc
		return ctx.Err()
	}
}

// exitError turns what exec.Cmd.Wait or ssh.Session.Wait returned into
// nil or an *ExitError carrying the stderr tail; other errors pass through.
func exitError(err error, stderr string) error {
	var (
		xe  *exec.ExitError
		se  *ssh.ExitError
		sme *ssh.ExitMissingError
	)
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: exit 0, but a leftover child kept the pipes open.
		return nil
	case errors.As(err, &xe):
		return execExitError(xe, stderr)
	case errors.As(err, &se):
		return &ExitError{Status: se.ExitStatus(), Signal: se.Signal(), Stderr: stderr}
	case errors.As(err, &sme):
		return &ExitError{Status: -1, Stderr: stderr}
	}
	return err
}

func execExitError(xe *exec.ExitError, stderr string) *ExitError {
	e := &ExitError{Status: xe.ExitCode(), Stderr: stderr}
	if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Status = 128 + int(ws.Signal())
		e.Signal = signalName(ws.Signal())
	}
	return e
}

// signalName names a signal the way ssh's exit-signal does ("KILL"), so
// that ExitError.Signal reads the same for every agent.
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return strconv.Itoa(int(s))
}

// signalNames are ssh's names (RFC 4254 section 6.10) plus the user ones.
var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "ABRT", syscall.SIGALRM: "ALRM", syscall.SIGBUS: "BUS",
	syscall.SIGFPE: "FPE", syscall.SIGHUP: "HUP", syscall.SIGILL: "ILL",
	syscall.SIGINT: "INT", syscall.SIGKILL: "KILL", syscall.SIGPIPE: "PIPE",
	syscall.SIGQUIT: "QUIT", syscall.SIGSEGV: "SEGV", syscall.SIGTERM: "TERM",
	syscall.SIGUSR1: "USR1", syscall.SIGUSR2: "USR2",
}

// tail is the writer for a command's stderr: it keeps the last stderrTail
// bytes for ExitError and, when debug logging is on, logs each line.
type tail struct {
	mu        sync.Mutex
	buf       []byte
	truncated bool
	lines     *lineLog // nil when not logging
}

func newTail(log hclog.Logger, stream string) *tail {
	return &tail{lines: newLineLog(log, stream)}
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - stderrTail; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	if t.lines != nil {
		t.lines.Write(b)
	}
	return len(b), nil
}

// String returns the kept tail, trimmed; when the start was cut off, the
// partial first line is dropped too.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if i := bytes.IndexByte(b, '\n'); t.truncated && i >= 0 {
		b = b[i+1:]
	}
	return strings.TrimSpace(string(b))
}

// lineLog logs what is written to it line by line at debug level.
type lineLog struct {
	log     hclog.Logger
	stream  string
	partial []byte
}

// newLineLog returns nil unless log is at debug level: then output is not
// even split into lines.
func newLineLog(log hclog.Logger, stream string) *lineLog {
	if log == nil || !log.IsDebug() {
		return nil
	}
	return &lineLog{log: log, stream: stream}
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 && len(l.partial) < maxLogLine {
			return len(b), nil
		}
		if i < 0 || i > maxLogLine {
			i = maxLogLine
		}
		l.log.Debug("command output", "stream", l.stream, "line", string(l.partial[:i]))
		if i < len(l.partial) && l.partial[i] == '\n' {
			i++
		}
		l.partial = append(l.partial[:0], l.partial[i:]...)
	}
}

// signOfLife takes a command's stdout and closes alive on the first byte.
type signOfLife struct {
	once  sync.Once
	alive chan struct{}
	next  io.Writer // nil: the bytes go nowhere
}

func newSignOfLife(log hclog.Logger) *signOfLife {
	return &signOfLife{alive: make(chan struct{}), next: stdoutWriter(log)}
}

func (s *signOfLife) Write(b []byte) (int, error) {
	if len(b) > 0 {
		s.once.Do(func() { close(s.alive) })
	}
	if s.next == nil {
		return len(b), nil
	}
	return s.next.Write(b)
}

// stdoutWriter is where a command's stdout goes: nowhere (nil), or to the
// debug log. The orted talks to its parent over its own connection, not
// stdout. nil lets exec connect /dev/null without a copying goroutine.
func stdoutWriter(log hclog.Logger) io.Writer {
	if l := newLineLog(log, "stdout"); l != nil {
		return l
	}
	return nil
}

// orNull returns log, or a logger that drops everything.
func orNull(log hclog.Logger) hclog.Logger {
	if log == nil {
		return hclog.NewNullLogger()
	}
	return log
}
