// Package stall keeps this process's own stalls out of its bounds on a
// peer. On a starved machine a process may not run at all for many
// seconds (15-20 s were seen at a load of 170 on a 2-core machine); a
// timer that fires after such a stall would blame the peer, the server
// or the child for time in which this side did not run either, and
// often neither did they.
//
// A meter goroutine wakes every Tick and counts each wake that comes
// more than Grace late as time lost. A Timer fires once its duration has
// passed plus the time lost meanwhile, so that only time in which this
// process ran counts, up to Stretch times its duration in all: a process
// late on every wake must still end a bound on a peer that never
// answers.
package stall

import (
	"sync"
	"time"
)

const (
	// Tick is how often the meter wakes.
	Tick = 250 * time.Millisecond
	// Grace is the lateness of a wake that is scheduling noise, not a
	// stall: a wake later than this counts whole as time lost.
	Grace = time.Second
	// Stretch bounds how far the time lost may push a timer, in its
	// durations.
	Stretch = 4
)

// meter is the process's one meter.
var meter struct {
	once sync.Once
	mu   sync.Mutex
	lost int64 // nanoseconds lost, up to the last wake
	last int64 // the last wake, in nanoseconds since epoch
}

// epoch gives monotonic nanoseconds: time.Since keeps the monotonic
// reading, so wall-clock steps cannot look like stalls.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// Start starts the meter if it is not running; the first timer does it
// too. A test that counts goroutines starts it before counting.
func Start() {
	meter.once.Do(func() {
		meter.last = now()
		go measure()
	})
}

func measure() {
	for {
		time.Sleep(Tick)
		meter.mu.Lock()
		t := now()
		meter.lost = lostAt(t)
		meter.last = t
		meter.mu.Unlock()
	}
}

// Lost is how long this process has not run since the meter started,
// counting a stall still under way: a timer that fires at the end of a
// stall may run before the meter does.
func Lost() time.Duration {
	Start()
	meter.mu.Lock()
	defer meter.mu.Unlock()
	return time.Duration(lostAt(now()))
}

// lostAt is the time lost at t, with meter.mu held.
func lostAt(t int64) int64 {
	lost := meter.lost
	if late := t - meter.last - int64(Tick); late > int64(Grace) {
		lost += late
	}
	return lost
}
