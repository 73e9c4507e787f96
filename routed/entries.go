package routed

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
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
// learned. It is a rope: a list of runs, or the concatenation of other
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

// The wire form of a list is one string: its runs, separated by commas,
// each its first id and then its addresses, separated by spaces:
// "3 tcp://10.0.0.3:41234 tcp://10.0.0.4:41234,9 tcp://…" ("" is a
// tombstone, so "5 " is the run of one). The flood's whole list, which
// every daemon receives, is thus one JSON string: encoding/json scans a
// string in a few fast passes, where an object per entry, or a string
// per address, costs it several times the work; and the addresses share
// the string's memory.
const (
	runSep  = ","
	addrSep = " "
)

// MarshalText writes the list's wire form; runs that continue one another
// are joined. An address that holds a separator is refused.
func (e Entries) MarshalText() ([]byte, error) {
	var b []byte
	next := 0
	for r := range e.Runs() {
		if len(b) == 0 || r.First != next {
			if len(b) > 0 {
				b = append(b, runSep...)
			}
			b = strconv.AppendInt(b, int64(r.First), 10)
		}
		for i, a := range r.Addrs {
			if strings.Contains(a, addrSep) || strings.Contains(a, runSep) {
				return nil, fmt.Errorf("address %q of id %d holds a separator", a, r.First+i)
			}
			b = append(append(b, addrSep...), a...)
		}
		next = r.First + len(r.Addrs)
	}
	return b, nil
}

// UnmarshalText reads the wire form, joining runs that continue one
// another as MarshalText does. A run whose ids would pass the largest int
// is refused: its entries could not be numbered.
func (e *Entries) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*e = Entries{}
		return nil
	}
	text := string(b)
	var runs []Run
	for run := range strings.SplitSeq(text, runSep) {
		first, addrs, ok := strings.Cut(run, addrSep)
		id, err := strconv.Atoi(first)
		if !ok || err != nil {
			return fmt.Errorf("address run %.40q: want a first id and its addresses", run)
		}
		list := strings.Split(addrs, addrSep)
		if id > math.MaxInt-len(list) {
			return fmt.Errorf("address run from id %d of %d entries: ids past the largest int", id, len(list))
		}
		if k := len(runs) - 1; k >= 0 && runs[k].First+len(runs[k].Addrs) == id {
			runs[k].Addrs = append(runs[k].Addrs, list...) // one form for one list
			continue
		}
		runs = append(runs, Run{id, list})
	}
	*e = entriesOfRuns(runs)
	return nil
}
