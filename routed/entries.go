package routed

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Entry is one daemon's contact address.
type Entry struct {
	ID   int
	Addr string
}

// Run is the addresses of the consecutive daemons First, First+1, ….
type Run struct {
	First int
	Addrs []string
}

// Entries is an immutable list of address entries in the order they were
// gathered. It is a rope: a list of runs, or the concatenation of other
// lists, each knowing the set of ids it holds. A daemon reports its
// subtree as its own entry followed by its children's reports, unchanged,
// and forwards what it learns as it came; so a message is built, and
// mostly learned, in time proportional to its spans and parts, not to its
// entries. The zero value is the empty list.
type Entries struct{ l *entryList }

type entryList struct {
	runs  []Run     // a leaf
	parts []Entries // or a concatenation, never both
	ids   Ranges    // every id held
	n     int       // entries, a repeated id counted each time
}

// EntriesOf lists es in order.
func EntriesOf(es ...Entry) Entries {
	var runs []Run
	for _, e := range es {
		if k := len(runs) - 1; k >= 0 && runs[k].First+len(runs[k].Addrs) == e.ID {
			runs[k].Addrs = append(runs[k].Addrs, e.Addr)
			continue
		}
		runs = append(runs, Run{e.ID, []string{e.Addr}})
	}
	return entriesOfRuns(runs)
}

// entriesOfRuns lists runs in order; the runs are not copied.
func entriesOfRuns(runs []Run) Entries {
	l := &entryList{runs: runs}
	for _, r := range runs {
		l.ids.Add(r.First, r.First+len(r.Addrs))
		l.n += len(r.Addrs)
	}
	if l.n == 0 {
		return Entries{}
	}
	return Entries{l}
}

// Concat lists the parts one after the other; they are shared, not copied.
func Concat(parts ...Entries) Entries {
	l := &entryList{}
	for _, p := range parts {
		if p.l == nil {
			continue
		}
		l.parts = append(l.parts, p)
		l.ids.AddAll(p.l.ids)
		l.n += p.l.n
	}
	switch len(l.parts) {
	case 0:
		return Entries{}
	case 1:
		return l.parts[0]
	}
	return Entries{l}
}

// Len is the number of entries.
func (e Entries) Len() int {
	if e.l == nil {
		return 0
	}
	return e.l.n
}

// IDs is the set of ids the list holds.
func (e Entries) IDs() Ranges {
	if e.l == nil {
		return Ranges{}
	}
	return e.l.ids
}

// repeats says some id is in the list more than once.
func (e Entries) repeats() bool { return e.l != nil && e.l.n != e.l.ids.Len() }

// Runs yields the list's runs in order.
func (e Entries) Runs() iter.Seq[Run] {
	return func(yield func(Run) bool) { e.eachRun(yield) }
}

func (e Entries) eachRun(yield func(Run) bool) bool {
	if e.l == nil {
		return true
	}
	for _, r := range e.l.runs {
		if !yield(r) {
			return false
		}
	}
	for _, p := range e.l.parts {
		if !p.eachRun(yield) {
			return false
		}
	}
	return true
}

// All yields the entries in order.
func (e Entries) All() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for r := range e.Runs() {
			for i, a := range r.Addrs {
				if !yield(Entry{r.First + i, a}) {
					return
				}
			}
		}
	}
}

// Slice is the entries in order.
func (e Entries) Slice() []Entry { return slices.Collect(e.All()) }

// IndexOf is the position of id's first entry.
func (e Entries) IndexOf(id int) (int, bool) {
	if e.l == nil || !e.l.ids.Contains(id) {
		return 0, false
	}
	at := 0
	for _, r := range e.l.runs {
		if id >= r.First && id < r.First+len(r.Addrs) {
			return at + id - r.First, true
		}
		at += len(r.Addrs)
	}
	for _, p := range e.l.parts {
		if i, ok := p.IndexOf(id); ok {
			return at + i, true
		}
		at += p.Len()
	}
	return 0, false
}

// String shows the entries as a list, for messages and tests.
func (e Entries) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for x := range e.All() {
		if b.Len() > 1 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "{%d %s}", x.ID, x.Addr)
	}
	b.WriteByte(']')
	return b.String()
}

// MarshalJSON writes the list as a JSON array of entries (null when
// empty): the wire form of a []Entry.
func (e Entries) MarshalJSON() ([]byte, error) {
	return json.Marshal(e.Slice())
}

// UnmarshalJSON reads a JSON array of entries.
func (e *Entries) UnmarshalJSON(b []byte) error {
	var s []Entry
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*e = EntriesOf(s...)
	return nil
}
