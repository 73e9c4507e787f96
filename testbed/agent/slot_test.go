package agent

import (
	"testing"
	"time"
)

// TestReserveLateWakeUp: three sessions ask at once for 50 ms slots and
// get them back to back. The slots are fixed when asked for, so a session
// woken late at its slot's end (a busy machine) moves no later slot, where
// each hand-over of a lock held across the sleep added its delay to every
// later session. A session that asks after an idle spell starts at once.
func TestReserveLateWakeUp(t *testing.T) {
	const ms = int64(time.Millisecond)
	cost := 50 * time.Millisecond
	var last int64
	var ends []int64
	for range 3 {
		_, end := reserve(0, last, cost)
		last, ends = end, append(ends, end)
	}
	for i, want := range []int64{50 * ms, 100 * ms, 150 * ms} {
		if ends[i] != want {
			t.Errorf("session %d ends at %v, want %v", i, time.Duration(ends[i]), time.Duration(want))
		}
	}
	if start, end := reserve(400*ms, last, cost); start != 400*ms || end != 450*ms {
		t.Errorf("after idle: slot %v–%v, want 400ms–450ms", time.Duration(start), time.Duration(end))
	}
	// A request while a slot is reserved queues behind it even if earlier
	// sessions already left.
	if start, _ := reserve(120*ms, last, cost); start != 150*ms {
		t.Errorf("behind a reserved slot: starts at %v, want 150ms", time.Duration(start))
	}
}

// TestReserveSlotFile: sessions of one spawner, one after another through
// its state file, get back-to-back slots; another spawner's are its own.
func TestReserveSlotFile(t *testing.T) {
	cost := time.Hour // far beyond the test's own time: every slot queues
	dir := t.TempDir()
	s := &session{cfg: Config{Locks: dir, SpawnCost: cost}, spawner: "node001"}
	first, err := s.reserveSlot()
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.reserveSlot()
	if err != nil {
		t.Fatal(err)
	}
	if d := second.Sub(first); d != cost {
		t.Errorf("second slot ends %v after the first, want %v", d, cost)
	}
	other := &session{cfg: s.cfg, spawner: "node002"}
	o, err := other.reserveSlot()
	if err != nil {
		t.Fatal(err)
	}
	if !o.Before(second) {
		t.Errorf("node002's first slot ends at %v, queued behind node001's (%v)", o, second)
	}
}
