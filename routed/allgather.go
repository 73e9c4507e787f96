package routed

import (
	"fmt"
	"sort"
)

// Entry is one daemon's contact address.
type Entry struct {
	ID   int
	Addr string
}

// Send asks the driver to send Entries to daemon To over the spawn tree.
type Send struct {
	To      int
	Entries []Entry
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
	reported []int // children that sent their subtree, in order
	known    map[int]string
	upward   []Entry // self and every reported child's subtree
	size     int
	sentUp   bool
}

// NewAllgather returns the machine of daemon self with address addr, among
// size daemons. children are self's direct children in the spawn tree.
func NewAllgather(self int, addr string, parent int, children []int, size int) *Allgather {
	a := &Allgather{
		self: self, parent: parent, size: size,
		children: make(map[int]bool, len(children)),
		known:    map[int]string{self: addr},
		upward:   []Entry{{self, addr}},
	}
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
func (a *Allgather) Receive(from int, entries []Entry) ([]Send, []Entry, error) {
	if from != a.parent && !a.children[from] {
		return nil, nil, fmt.Errorf("routed: daemon %d got addresses from %d, neither parent nor child", a.self, from)
	}
	fresh := a.learn(entries)
	var out []Send
	for _, c := range a.reported {
		if c != from && len(fresh) > 0 {
			out = append(out, Send{c, fresh})
		}
	}
	if from != a.parent {
		if a.hasReported(from) {
			return nil, nil, fmt.Errorf("routed: daemon %d reported twice to %d", from, a.self)
		}
		out = append(out, Send{from, a.everythingBut(entries)})
		a.reported = append(a.reported, from)
		a.upward = append(a.upward, entries...)
		out = append(out, a.maybeReportUp()...)
	}
	return out, fresh, nil
}

func (a *Allgather) learn(entries []Entry) []Entry {
	var fresh []Entry
	for _, e := range entries {
		if _, ok := a.known[e.ID]; !ok && e.ID >= 0 && e.ID < a.size {
			a.known[e.ID] = e.Addr
			fresh = append(fresh, e)
		}
	}
	return fresh
}

// everythingBut is what a reporting child does not know yet: every entry
// known here except the ones it just sent.
func (a *Allgather) everythingBut(sent []Entry) []Entry {
	skip := make(map[int]bool, len(sent))
	for _, e := range sent {
		skip[e.ID] = true
	}
	out := make([]Entry, 0, len(a.known)-len(skip))
	for id, addr := range a.known {
		if !skip[id] {
			out = append(out, Entry{id, addr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (a *Allgather) maybeReportUp() []Send {
	if a.sentUp || a.parent < 0 || len(a.reported) < len(a.children) {
		return nil
	}
	a.sentUp = true
	return []Send{{a.parent, a.upward}}
}

func (a *Allgather) hasReported(c int) bool {
	for _, r := range a.reported {
		if r == c {
			return true
		}
	}
	return false
}

// Skip replaces a child that was never spawned by the children adopted in
// its place (see spawn.Phase1.AdoptOrphans), and records the skipped
// daemon with an empty address, a tombstone that travels like any entry so
// that every daemon learns it is gone and phase 2 can still complete.
func (a *Allgather) Skip(child int, adopted []int) ([]Send, []Entry, error) {
	if !a.children[child] || a.hasReported(child) {
		return nil, nil, fmt.Errorf("routed: daemon %d cannot skip %d: not a child yet to report", a.self, child)
	}
	delete(a.children, child)
	for _, c := range adopted {
		a.children[c] = true
	}
	tomb := Entry{ID: child}
	fresh := a.learn([]Entry{tomb})
	a.upward = append(a.upward, fresh...)
	var out []Send
	for _, c := range a.reported {
		if len(fresh) > 0 {
			out = append(out, Send{c, fresh})
		}
	}
	return append(out, a.maybeReportUp()...), fresh, nil
}

// Lookup returns the address of daemon id if it is known; a skipped
// daemon is known with an empty address.
func (a *Allgather) Lookup(id int) (string, bool) {
	addr, ok := a.known[id]
	return addr, ok
}

// Complete reports whether every daemon's address is known here.
func (a *Allgather) Complete() bool { return len(a.known) == a.size }

// Known is the number of addresses known here.
func (a *Allgather) Known() int { return len(a.known) }
