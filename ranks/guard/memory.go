package guard

import (
	"sync"
	"sync/atomic"

	"prsh/internal/gcburst"
)

// memory watches the guard's bursts of starts (internal/gcburst): the
// guard cannot tell when its daemon's starts are over, so the first
// watch tick without a start ends a burst.
type memory struct {
	started atomic.Int64 // starts since the last look
	mu      sync.Mutex
	end     func() // ends the burst under way; nil if none
}

// noteStart counts a start.
func (m *memory) noteStart() {
	if m.started.Add(1) < gcburst.Many {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.end == nil {
		m.end = gcburst.Begin()
	}
}

// look is called at each of the watch's ticks: the first tick without a
// start after a burst ends it.
func (m *memory) look() {
	if m.started.Swap(0) > 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.end != nil {
		m.end()
		m.end = nil
	}
}
