package routed

import "fmt"

// Send asks the driver to send Entries to daemon To over the spawn tree.
type Send struct {
	To      int
	Entries Entries
}

// Flood is phase 2 at one daemon: the paper's Algorithm 2, a flooding
// all-gather of contact addresses over the spawn tree (the flood, here:
// "allgather" names only the PMI collective). A daemon reports its
// subtree's addresses to its parent in one message once all its children
// have reported; each child that reports gets what the daemon knows so far,
// and every later piece is forwarded to the children that already
// reported. The result: every daemon learns every address with few, large
// messages. It departs from the paper's listing in one place: the daemon's
// own address travels with its children's, which the listing leaves out.
type Flood struct {
	self     int
	parent   int // -1 for mpirun
	children map[int]bool
	reported []int        // children that sent their subtree, in order
	reporter map[int]bool // the same, as a set: a flat tree has n of them
	known    Ranges
	book     *Book
	upward   []Entries // self and every reported child's subtree
	sentUp   bool
}

// NewFlood returns the machine of daemon self with address addr.
// children are self's direct children in the spawn tree; book holds the
// addresses and says how many daemons there are.
func NewFlood(self int, addr string, parent int, children []int, book *Book) *Flood {
	f := &Flood{
		self: self, parent: parent, book: book,
		children: make(map[int]bool, len(children)),
		reporter: make(map[int]bool, len(children)),
		known:    RangesOf(self),
		upward:   []Entries{EntriesOf(Entry{self, addr})},
	}
	book.own(self, addr)
	for _, c := range children {
		f.children[c] = true
	}
	return f
}

// Start sends a leaf's address to its parent.
func (f *Flood) Start() []Send { return f.maybeReportUp() }

// Receive handles a list of entries from the parent or a child. It returns
// the messages to send and the entries learned for the first time, which
// the router needs to release held messages.
func (f *Flood) Receive(from int, entries Entries) ([]Send, Entries, error) {
	if from != f.parent && !f.children[from] {
		return nil, Entries{}, fmt.Errorf("routed: daemon %d got addresses from %d, neither parent nor child", f.self, from)
	}
	if from != f.parent && f.reporter[from] {
		return nil, Entries{}, fmt.Errorf("routed: daemon %d reported twice to %d", from, f.self)
	}
	fresh := f.learn(entries)
	var out []Send
	for _, c := range f.reported {
		if c != from && fresh.Len() > 0 {
			out = append(out, Send{c, fresh})
		}
	}
	if from != f.parent {
		out = append(out, Send{from, f.everythingBut(entries)})
		f.reported = append(f.reported, from)
		f.reporter[from] = true
		f.upward = append(f.upward, entries)
		out = append(out, f.maybeReportUp()...)
	}
	return out, fresh, nil
}

// learn marks known what entries holds that is in range and new here, and
// returns that part, in order. A list that is all new, the usual case, is
// taken whole; the rest is sorted out part by part.
func (f *Flood) learn(entries Entries) Entries {
	ids := entries.IDs()
	switch {
	case entries.Len() == 0 || f.known.ContainsAll(ids):
		return Entries{}
	case !entries.repeats() && ids.Within(0, f.book.Size()) && !f.known.Intersects(ids):
		f.known.AddAll(ids)
		f.book.learnAll(entries)
		return entries
	case entries.l.parts != nil:
		parts := make([]Entries, len(entries.l.parts))
		for i, p := range entries.l.parts {
			parts[i] = f.learn(p)
		}
		return Concat(parts...)
	}
	var runs []Run
	for _, r := range entries.l.runs {
		runs = f.learnRun(r, runs)
	}
	return entriesOfRuns(runs)
}

// learnRun appends to fresh the parts of r that are in range and new here.
func (f *Flood) learnRun(r Run, fresh []Run) []Run {
	if r.First < 0 || r.First > f.book.Size()-len(r.Addrs) {
		for i, addr := range r.Addrs { // partly out of range: one by one
			if id := r.First + i; id >= 0 && id < f.book.Size() && !f.known.Contains(id) {
				fresh = f.learnRun(Run{id, []string{addr}}, fresh)
			}
		}
		return fresh
	}
	for _, s := range f.known.Minus(r.First, r.First+len(r.Addrs)) {
		f.known.Add(s.Lo, s.Hi)
		f.book.learn(r, s.Lo, s.Hi)
		fresh = append(fresh, Run{s.Lo, r.Addrs[s.Lo-r.First : s.Hi-r.First]})
	}
	return fresh
}

// everythingBut is what a reporting child does not know yet: every entry
// known here except the ones it just sent, in id order.
func (f *Flood) everythingBut(sent Entries) Entries {
	rest := f.known.Without(sent.IDs())
	runs := make([]Run, len(rest.Spans()))
	for i, s := range rest.Spans() {
		runs[i] = f.book.run(s)
	}
	return entriesOfRuns(runs)
}

func (f *Flood) maybeReportUp() []Send {
	if f.sentUp || f.parent < 0 || len(f.reported) < len(f.children) {
		return nil
	}
	f.sentUp = true
	return []Send{{f.parent, Concat(f.upward...)}}
}

// Skip replaces a child that was never spawned by the children adopted in
// its place (see spawn.Phase1.AdoptOrphans), and records the skipped
// daemon with an empty address, a tombstone that travels like any entry so
// that every daemon learns it is gone and phase 2 can still complete.
func (f *Flood) Skip(child int, adopted []int) ([]Send, Entries, error) {
	if !f.children[child] || f.reporter[child] {
		return nil, Entries{}, fmt.Errorf("routed: daemon %d cannot skip %d: not a child yet to report", f.self, child)
	}
	delete(f.children, child)
	for _, c := range adopted {
		f.children[c] = true
	}
	var fresh Entries
	if !f.known.Contains(child) {
		f.book.own(child, "")
		fresh = f.learn(EntriesOf(Entry{ID: child}))
	}
	f.upward = append(f.upward, fresh)
	var out []Send
	for _, c := range f.reported {
		if fresh.Len() > 0 {
			out = append(out, Send{c, fresh})
		}
	}
	return append(out, f.maybeReportUp()...), fresh, nil
}

// Lookup returns the address of daemon id if it is known; a skipped
// daemon is known with an empty address.
func (f *Flood) Lookup(id int) (string, bool) {
	if !f.known.Contains(id) {
		return "", false
	}
	return f.book.Get(id), true
}

// Complete reports whether every daemon's address is known here.
func (f *Flood) Complete() bool { return f.known.Len() == f.book.Size() }

// Known is the number of addresses known here.
func (f *Flood) Known() int { return f.known.Len() }

// Reported says child sent its subtree's addresses: every daemon below it
// called back (or was skipped).
func (f *Flood) Reported(child int) bool { return f.reporter[child] }

// ReportedUp says this daemon sent its subtree's addresses to its parent:
// its whole subtree is up.
func (f *Flood) ReportedUp() bool { return f.sentUp }
