package agent

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// An external ssh (a Command agent such as "ssh %h") whose connection the
// server drops before authentication prints kex_exchange_identification
// (ssh_exchange_identification before OpenSSH 8.2) and exits 255. Until
// the command has given its sign of life, such an exit is the launcher's,
// not the daemon's, and the launcher is run again as the native client
// tries again: dropTries times in all, with the same pauses.

// launcherDropped tells an exit of the launcher whose connection the
// server dropped in the version exchange.
func launcherDropped(err error) bool {
	var xe *ExitError
	return errors.As(err, &xe) && xe.Status == 255 &&
		(strings.Contains(xe.Stderr, "kex_exchange_identification") ||
			strings.Contains(xe.Stderr, "ssh_exchange_identification"))
}

// dropRetry is the Process of a Command launch: the current try, replaced
// by a new one while the tries end as launcherDropped before any sign of
// life.
type dropRetry struct {
	relaunch func() (Process, error)
	log      hclog.Logger
	alive    chan struct{}
	closing  chan struct{}
	done     chan struct{} // closed once err is set
	err      error

	mu     sync.Mutex
	cur    Process
	closed bool
}

// newDropRetry follows the first try: started (first), or failed as
// launcherDropped while its payload was written (err).
func newDropRetry(first Process, err error, relaunch func() (Process, error), log hclog.Logger) *dropRetry {
	r := &dropRetry{relaunch: relaunch, log: log, cur: first,
		alive: make(chan struct{}), closing: make(chan struct{}), done: make(chan struct{})}
	go r.run(first, err)
	return r
}

// run follows the tries until one gives a sign of life or ends for
// another reason, or the tries run out. A try is p, or err when it failed
// to start.
func (r *dropRetry) run(p Process, err error) {
	defer close(r.done)
	for try := 1; ; try++ {
		alive := false
		if p != nil {
			err, alive = r.follow(p)
		}
		if alive || !launcherDropped(err) {
			r.err = err
			return
		}
		if try == dropTries {
			r.err = fmt.Errorf("ssh: connection dropped during the handshake %d times (the node's sshd may be limiting concurrent logins: MaxStartups): %w", try, err)
			return
		}
		r.log.Debug("launcher's ssh connection dropped during the handshake; trying again", "try", try, "error", err)
		if !r.pause(try) {
			r.err = err
			return
		}
		p, err = r.relaunch()
		if p != nil && !r.swap(p) {
			p.Close()
			r.err = p.Wait()
			return
		}
	}
}

// follow waits for p's sign of life (passed on; then for its end) or its
// end, and reports its result and whether it was alive.
func (r *dropRetry) follow(p Process) (error, bool) {
	ended := make(chan struct{})
	go func() { p.Wait(); close(ended) }()
	select {
	case <-p.Alive():
		close(r.alive)
		return p.Wait(), true
	case <-ended:
		select {
		case <-p.Alive():
			close(r.alive)
			return p.Wait(), true
		default:
			return p.Wait(), false
		}
	}
}

// pause waits before the next try; false if Close came meanwhile.
func (r *dropRetry) pause(try int) bool {
	t := time.NewTimer(dropBackoff(try))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.closing:
		return false
	}
}

// swap makes next the current try unless Close came first.
func (r *dropRetry) swap(next Process) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.cur = next
	return true
}

// Alive implements Process.
func (r *dropRetry) Alive() <-chan struct{} { return r.alive }

// Wait implements Process.
func (r *dropRetry) Wait() error {
	<-r.done
	return r.err
}

// Close implements Process: it closes the current try and stops the
// tries.
func (r *dropRetry) Close() error { return r.end(Process.Close) }

// Kill implements Process: it kills the current try and stops the tries.
func (r *dropRetry) Kill() error { return r.end(Process.Kill) }

// end stops the tries and ends the current one with how.
func (r *dropRetry) end(how func(Process) error) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.closing)
	}
	cur := r.cur
	r.mu.Unlock()
	var err error
	if cur != nil {
		err = how(cur)
	}
	<-r.done
	return err
}
