// Package gcburst is how a process that starts many ranks at once (a
// daemon, the node's guard) keeps its memory: each start leaves garbage
// (the rank's argv and environment, copied on their way to exec), and at
// GOGC 100 the heap of one that started 256 ranks doubled before a
// collection, then kept its high-water mark for minutes (the scavenger).
// A burst of Many starts or more is run at GOGC GCPercent, and what it
// left is handed back once it ends. Fewer starts leave too little garbage
// to pay for the collections: a first collection leaves about 1 MB of
// the collector's own memory behind.
package gcburst

import "runtime/debug"

const (
	// Many is how many starts make a burst.
	Many = 32
	// GCPercent is GOGC during a burst.
	GCPercent = 25
)

// Begin runs the process at GCPercent until the returned end, which
// restores GOGC and hands the burst's garbage back to the system.
func Begin() (end func()) {
	was := debug.SetGCPercent(GCPercent)
	return func() {
		debug.SetGCPercent(was)
		debug.FreeOSMemory()
	}
}
