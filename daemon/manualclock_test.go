package daemon

import (
	"slices"
	"sync"
	"time"
)

// ManualClock is a Clock whose time moves only when told (Advance), for
// tests: a timer of 20 s fires the moment the test says 20 s have passed.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	pending []*manualTimer
}

type manualTimer struct {
	clock *ManualClock
	at    time.Time
	f     func()
	done  bool // fired or stopped
}

// NewManualClock starts a manual clock at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f once the clock has been advanced by d; at once, in
// its own goroutine, when d is not positive, as time.AfterFunc does.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{clock: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		t.done = true
		go f()
		return t
	}
	c.pending = append(c.pending, t)
	return t
}

// WallAfterFunc is AfterFunc: a manual clock has no stalls.
func (c *ManualClock) WallAfterFunc(d time.Duration, f func()) Timer { return c.AfterFunc(d, f) }

func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	stopped := !t.done
	t.done = true
	return stopped
}

// Advance moves the clock d forward and calls, in the caller's goroutine
// and in the order of their deadlines, the timers that became due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	for {
		t := c.takeDue()
		if t == nil {
			return
		}
		t.f()
	}
}

// takeDue removes and returns the earliest timer that is due, or nil.
func (c *ManualClock) takeDue() *manualTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropDone()
	if len(c.pending) == 0 {
		return nil
	}
	t := c.earliest()
	if t.at.After(c.now) {
		return nil
	}
	t.done = true
	c.dropDone()
	return t
}

func (c *ManualClock) earliest() *manualTimer {
	return slices.MinFunc(c.pending, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
}

func (c *ManualClock) dropDone() {
	c.pending = slices.DeleteFunc(c.pending, func(t *manualTimer) bool { return t.done })
}
