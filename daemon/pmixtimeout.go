package daemon

import (
	"time"

	"prsh/modex/pmix"
)

// A PMIx fence's, connect's or disconnect's PMIX_TIMEOUT is the user's
// budget of wall-clock time, as --timeout is, not a bound on a stall:
// time in which the daemon did not run counts (Clock.WallAfterFunc).
// Its timer is stopped when the operation is answered, so that one that
// finished leaves none behind.

// armTimeout answers reply with PMIX_ERR_TIMEOUT once timeout has
// passed, unless pmixReply answered it first; 0 is no timeout.
func (d *Daemon) armTimeout(reply *pmix.Reply, timeout time.Duration) {
	if timeout > 0 {
		d.pmix.timeouts[reply] = d.clock.WallAfterFunc(timeout, func() { reply.Send(nil, pmix.ErrTimeout) })
	}
}

// pmixReply answers a fence, connect or disconnect and stops the timer
// of its timeout.
func (d *Daemon) pmixReply(reply *pmix.Reply, data []byte, err error) {
	if t, ok := d.pmix.timeouts[reply]; ok {
		t.Stop()
		delete(d.pmix.timeouts, reply)
	}
	reply.Send(data, err)
}
