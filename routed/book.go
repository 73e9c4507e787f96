package routed

// Book is a dense table of contact addresses indexed by daemon id: what
// phase 2 learned, one string per daemon and no map.
//
// A daemon owns its Book. A simulator of a whole cluster may instead give
// every daemon one shared Book (NewSharedBook): each daemon writes its own
// address there when it starts, and learning an id only marks it known at
// the learner, which then reads the owner's address. That is what each
// daemon's own Book would hold, since an address travels unchanged from
// its owner; it keeps the cluster's memory at one table, not one per
// daemon (10^10 entries at 100,000 nodes).
type Book struct {
	addrs  []string
	shared bool
}

// NewBook returns an empty table for size daemons.
func NewBook(size int) *Book { return &Book{addrs: make([]string, size)} }

// NewSharedBook returns a table that every daemon of a simulated cluster
// of size daemons writes its own address into.
func NewSharedBook(size int) *Book { return &Book{addrs: make([]string, size), shared: true} }

// Size is the number of daemons.
func (b *Book) Size() int { return len(b.addrs) }

// Get is the address of id; the caller knows id was learned.
func (b *Book) Get(id int) string { return b.addrs[id] }

// run is the addresses of lo..hi-1 as a run that shares the table.
func (b *Book) run(s Span) Run { return Run{s.Lo, b.addrs[s.Lo:s.Hi:s.Hi]} }

// own records a daemon's own address, or a skipped daemon's tombstone.
func (b *Book) own(id int, addr string) { b.addrs[id] = addr }

// learn records the addresses of lo..hi-1, taken from r.
func (b *Book) learn(r Run, lo, hi int) {
	if !b.shared {
		copy(b.addrs[lo:hi], r.Addrs[lo-r.First:hi-r.First])
	}
}

// learnAll records every address of e, whose ids are all in range and
// new here.
func (b *Book) learnAll(e Entries) {
	if b.shared {
		return
	}
	for r := range e.Runs() {
		copy(b.addrs[r.First:], r.Addrs)
	}
}
