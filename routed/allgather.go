package routed

import "fmt"

// Send asks the driver to send Entries to daemon To over the spawn tree.
type Send struct {
	To      int
	Entries Entries
}

// Allgather is phase 2 at one daemon: the paper's Algorithm 2, a flooding
// all-gather of contact addresses over the spawn tree. A daemon reports its
// subtree's addresses to its parent in one message once all its children
// have reported; each child that reports gets what the daemon knows so far,
// and every later piece is forwarded to the children that already
// reported. The result: every daemon learns every address with few, large
// messages. It departs from the paper's listing in one place: the daemon's
// own address travels with its children's, which the listing leaves out.
type Allgather struct {
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

// NewAllgather returns the machine of daemon self with address addr.
// children are self's direct children in the spawn tree; book holds the
// addresses and says how many daemons there are.
func NewAllgather(self int, addr string, parent int, children []int, book *Book) *Allgather {
	a := &Allgather{
		self: self, parent: parent, book: book,
		children: make(map[int]bool, len(children)),
		reporter: make(map[int]bool, len(children)),
		known:    RangesOf(self),
		upward:   []Entries{EntriesOf(Entry{self, addr})},
	}
	book.own(self, addr)
	for _, c := range children {
		a.children[c] = true
	}
	return a
}

// Start sends a leaf's address to its parent.
func (a *Allgather) Start() []Send { return a.maybeReportUp() }

// Receive handles a list of entries from the parent or a child. It returns
// the messages to send and the entries learned for the first time, which
// the router needs to release held messages.
func (a *Allgather) Receive(from int, entries Entries) ([]Send, Entries, error) {
	if from != a.parent && !a.children[from] {
		return nil, Entries{}, fmt.Errorf("routed: daemon %d got addresses from %d, neither parent nor child", a.self, from)
	}
	if from != a.parent && a.reporter[from] {
		return nil, Entries{}, fmt.Errorf("routed: daemon %d reported twice to %d", from, a.self)
	}
	fresh := a.learn(entries)
	var out []Send
	for _, c := range a.reported {
		if c != from && fresh.Len() > 0 {
			out = append(out, Send{c, fresh})
		}
	}
	if from != a.parent {
		out = append(out, Send{from, a.everythingBut(entries)})
		a.reported = append(a.reported, from)
		a.reporter[from] = true
		a.upward = append(a.upward, entries)
		out = append(out, a.maybeReportUp()...)
	}
	return out, fresh, nil
}

// learn marks known what entries holds that is in range and new here, and
// returns that part, in order. A list that is all new, the usual case, is
// taken whole; the rest is sorted out part by part.
func (a *Allgather) learn(entries Entries) Entries {
	ids := entries.IDs()
	switch {
	case entries.Len() == 0 || a.known.ContainsAll(ids):
		return Entries{}
	case !entries.repeats() && ids.Within(0, a.book.Size()) && !a.known.Intersects(ids):
		a.known.AddAll(ids)
		a.book.learnAll(entries)
		return entries
	case entries.l.parts != nil:
		parts := make([]Entries, len(entries.l.parts))
		for i, p := range entries.l.parts {
			parts[i] = a.learn(p)
		}
		return Concat(parts...)
	}
	var runs []Run
	for _, r := range entries.l.runs {
		runs = a.learnRun(r, runs)
	}
	return entriesOfRuns(runs)
}

// learnRun appends to fresh the parts of r that are in range and new here.
func (a *Allgather) learnRun(r Run, fresh []Run) []Run {
	if r.First < 0 || r.First > a.book.Size()-len(r.Addrs) {
		for i, addr := range r.Addrs { // partly out of range: one by one
			if id := r.First + i; id >= 0 && id < a.book.Size() && !a.known.Contains(id) {
				fresh = a.learnRun(Run{id, []string{addr}}, fresh)
			}
		}
		return fresh
	}
	for _, s := range a.known.Minus(r.First, r.First+len(r.Addrs)) {
		a.known.Add(s.Lo, s.Hi)
		a.book.learn(r, s.Lo, s.Hi)
		fresh = append(fresh, Run{s.Lo, r.Addrs[s.Lo-r.First : s.Hi-r.First]})
	}
	return fresh
}

// everythingBut is what a reporting child does not know yet: every entry
// known here except the ones it just sent, in id order.
func (a *Allgather) everythingBut(sent Entries) Entries {
	rest := a.known.Without(sent.IDs())
	runs := make([]Run, len(rest.Spans()))
	for i, s := range rest.Spans() {
		runs[i] = a.book.run(s)
	}
	return entriesOfRuns(runs)
}

func (a *Allgather) maybeReportUp() []Send {
	if a.sentUp || a.parent < 0 || len(a.reported) < len(a.children) {
		return nil
	}
	a.sentUp = true
	return []Send{{a.parent, Concat(a.upward...)}}
}

// Skip replaces a child that was never spawned by the children adopted in
// its place (see spawn.Phase1.AdoptOrphans), and records the skipped
// daemon with an empty address, a tombstone that travels like any entry so
// that every daemon learns it is gone and phase 2 can still complete.
func (a *Allgather) Skip(child int, adopted []int) ([]Send, Entries, error) {
	if !a.children[child] || a.reporter[child] {
		return nil, Entries{}, fmt.Errorf("routed: daemon %d cannot skip %d: not a child yet to report", a.self, child)
	}
	delete(a.children, child)
	for _, c := range adopted {
		a.children[c] = true
	}
	var fresh Entries
	if !a.known.Contains(child) {
		a.book.own(child, "")
		fresh = a.learn(EntriesOf(Entry{ID: child}))
	}
	a.upward = append(a.upward, fresh)
	var out []Send
	for _, c := range a.reported {
		if fresh.Len() > 0 {
			out = append(out, Send{c, fresh})
		}
	}
	return append(out, a.maybeReportUp()...), fresh, nil
}

// Lookup returns the address of daemon id if it is known; a skipped
// daemon is known with an empty address.
func (a *Allgather) Lookup(id int) (string, bool) {
	if !a.known.Contains(id) {
		return "", false
	}
	return a.book.Get(id), true
}

// Complete reports whether every daemon's address is known here.
func (a *Allgather) Complete() bool { return a.known.Len() == a.book.Size() }

// Known is the number of addresses known here.
func (a *Allgather) Known() int { return a.known.Len() }

// Reported says child sent its subtree's addresses: every daemon below it
// called back (or was skipped).
func (a *Allgather) Reported(child int) bool { return a.reporter[child] }

// ReportedUp says this daemon sent its subtree's addresses to its parent:
// its whole subtree is up.
func (a *Allgather) ReportedUp() bool { return a.sentUp }
