package stall

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Timer calls a function, in its own goroutine, once its duration has
// passed in which this process ran.
type Timer struct {
	mu      sync.Mutex
	t       *time.Timer
	start   time.Time
	d       time.Duration
	lost0   time.Duration
	excused func() bool
	f       func()
	fired   bool
	stopped bool
}

// AfterFunc calls f once d has passed in which this process ran.
func AfterFunc(d time.Duration, f func()) *Timer { return Unless(d, nil, f) }

// Unless is AfterFunc with an excuse: when the time is up and excused
// reports local evidence that this side, not its peer, is late (bytes
// that wait unread, a connection the kernel has completed), the timer
// looks again a Tick later, within the same Stretch.
func Unless(d time.Duration, excused func() bool, f func()) *Timer {
	t := &Timer{start: time.Now(), d: d, lost0: Lost(), excused: excused, f: f}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.t = time.AfterFunc(d, t.fire)
	return t
}

func (t *Timer) fire() {
	if t.due() {
		t.f()
	}
}

// due says the time is up and marks the timer fired, or sets it again.
func (t *Timer) due() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	if wait := t.remaining(); wait > 0 {
		t.t.Reset(wait)
		return false
	}
	t.fired = true
	return true
}

// remaining is how much longer the timer must wait: its duration and the
// time lost since it started are not both over, or its excuse holds;
// never past Stretch durations.
func (t *Timer) remaining() time.Duration {
	elapsed, limit := time.Since(t.start), Stretch*t.d
	if elapsed >= limit {
		return 0
	}
	if due := t.d + min(Lost()-t.lost0, limit-t.d); elapsed < due {
		return due - elapsed
	}
	if t.excused != nil && t.excused() {
		return min(Tick, limit-elapsed)
	}
	return 0
}

// Stop keeps f from being called; it reports false if f was called
// already, as time.Timer's Stop does (it does not wait for f to return).
func (t *Timer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.t.Stop()
	return !t.fired
}

// WithTimeout is context.WithTimeout with the time counted as a Timer
// counts it; once it is up, the context's Err is
// context.DeadlineExceeded.
func WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return timeoutCtx{ctx}, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// timeoutCtx reports its timer's end as a deadline, as
// context.WithTimeout's contexts do (net's dials word it "i/o timeout").
type timeoutCtx struct{ context.Context }

func (c timeoutCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
