package daemon

import (
	"time"

	"prsh/internal/stall"
)

// Clock is the driver's time: the machine's timers, the bound on a new
// link's Hello and the milestones' times. The wall clock in production;
// a ManualClock lets a test decide when timers fire.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed in which
	// this process ran: a bound on another's stall must not count time
	// in which this side did not run either (internal/stall).
	AfterFunc(d time.Duration, f func()) Timer
	// WallAfterFunc calls f once d of wall-clock time has passed: the
	// user's --timeout is a budget of time, not a bound on a stall.
	WallAfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop keeps the call from happening; false if it already has.
	Stop() bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) Timer { return stall.AfterFunc(d, f) }

func (wallClock) WallAfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
