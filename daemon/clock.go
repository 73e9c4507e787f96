package daemon

import "time"

// Clock is the driver's time: the machine's timers, the bound on a new
// link's Hello and the milestones' times. The wall clock in production;
// a ManualClock lets a test decide when timers fire.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop keeps the call from happening; false if it already has.
	Stop() bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
