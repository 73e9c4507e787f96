package guard

import (
	"runtime/debug"
	"sync/atomic"
)

// guardGCPercent is the guard's GOGC. Its live heap is a few hundred
// KiB whatever the number of ranks, but each start leaves garbage (the
// rank's argv and environment, decoded then copied for exec): at the
// default 100 the heap grows to the runtime's 4 MB minimum before a
// collection, and the scavenger keeps about that much. A quarter of it
// costs a few more small collections during a burst of starts.
const guardGCPercent = 25

// memory hands the start burst's garbage back to the system once the
// starts have stopped: the runtime's scavenger would keep the heap's
// high-water mark for minutes.
type memory struct {
	started atomic.Int64 // starts since the last look
	dirty   bool         // starts happened since the last release
}

func limitGuardHeap() { debug.SetGCPercent(guardGCPercent) }

// noteStart counts a start, from any goroutine.
func (m *memory) noteStart() { m.started.Add(1) }

// look is called at each of the watch's ticks, from its goroutine: the
// first tick without a start after some releases the memory they left.
func (m *memory) look() {
	if m.started.Swap(0) > 0 {
		m.dirty = true
		return
	}
	if m.dirty {
		m.dirty = false
		debug.FreeOSMemory()
	}
}
