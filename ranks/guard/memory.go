package guard

import (
	"runtime/debug"
	"sync/atomic"
)

// A burst of manyStarts starts or more is run at GOGC burstGCPercent,
// and what it left is handed back to the system once the starts stop.
// The guard's live heap is a few hundred KiB whatever the number of
// ranks, but each start leaves garbage (the rank's argv and environment,
// decoded then copied for exec): at GOGC 100 the heap of a guard of 256
// ranks filled the runtime's 4 MB minimum, which the scavenger then kept
// for minutes. A guard of a few ranks is left as it was: collections it
// would not otherwise run leave some of the collector's own memory.
const (
	manyStarts     = 32
	burstGCPercent = 25
)

// memory watches the guard's bursts of starts.
type memory struct {
	started atomic.Int64 // starts since the last look
	lowered atomic.Bool  // GOGC is burstGCPercent until the burst ends
	gogc    atomic.Int64 // GOGC before the burst
}

// noteStart counts a start, from the guard's serving goroutine.
func (m *memory) noteStart() {
	if m.started.Add(1) >= manyStarts && m.lowered.CompareAndSwap(false, true) {
		m.gogc.Store(int64(debug.SetGCPercent(burstGCPercent)))
	}
}

// look is called at each of the watch's ticks: the first tick without a
// start after a burst ends it.
func (m *memory) look() {
	if m.started.Swap(0) > 0 || !m.lowered.Load() {
		return
	}
	debug.SetGCPercent(int(m.gogc.Load()))
	debug.FreeOSMemory()
	m.lowered.Store(false)
}
