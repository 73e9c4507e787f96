package iof

import (
	"io"
	"os"
	"sync"
)

// StdinStream marks a chunk of mpirun's standard input; AllRanks as its
// rank sends it to every rank.
const (
	StdinStream Stream = 3
	AllRanks           = 1<<32 - 1
)

// Fanout passes mpirun's standard input down the spawn tree to the ranks
// it is for. Writes to a rank's pipe and to a child's stream happen
// outside the lock: a rank that does not read its input stalls the input,
// never the daemon's event loop or anybody's output.
type Fanout struct {
	mu       sync.Mutex
	self     int
	parent   func(daemon int) int // in the spawn tree; -1 above the root
	rankNode []int                // the daemon of each rank
	opens    map[int]func() (io.WriteCloser, error)
	pipes    map[int]*os.File // local ranks' stdin
	children map[int]*Sender  // streams to children, opened on first use
	closers  map[int]io.Closer
}

// NewFanout returns the fanout of daemon self; parent gives the spawn
// tree, in which the input for a daemon goes down through the direct child
// above it (a child adopted from a skipped node included).
func NewFanout(self int, parent func(daemon int) int) *Fanout {
	return &Fanout{
		self: self, parent: parent, opens: map[int]func() (io.WriteCloser, error){},
		pipes: map[int]*os.File{}, children: map[int]*Sender{}, closers: map[int]io.Closer{},
	}
}

// SetRanks records where the ranks run.
func (f *Fanout) SetRanks(rankNode []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rankNode = rankNode
}

// AddChild registers a direct child and how to open a stream to it.
func (f *Fanout) AddChild(id int, open func() (io.WriteCloser, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens[id] = open
}

// AddRank registers the write end of a local rank's stdin pipe.
func (f *Fanout) AddRank(rank int, pipe *os.File) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pipes[rank] = pipe
}

// Send delivers a chunk to the local ranks it is for and passes it on to
// the children on its way.
func (f *Fanout) Send(c Chunk) error {
	pipes, kids := f.targets(c.Rank)
	for rank, p := range pipes {
		f.writeLocal(rank, p, c)
	}
	for _, child := range kids {
		if err := f.forward(child, c); err != nil {
			return err
		}
	}
	return nil
}

func (f *Fanout) targets(rank int) (map[int]*os.File, []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pipes := map[int]*os.File{}
	if rank == AllRanks {
		for r, p := range f.pipes {
			pipes[r] = p
		}
		kids := make([]int, 0, len(f.opens))
		for id := range f.opens {
			kids = append(kids, id)
		}
		return pipes, kids
	}
	if rank < 0 || rank >= len(f.rankNode) {
		return nil, nil
	}
	if d := f.rankNode[rank]; d != f.self {
		return nil, f.childAbove(d)
	}
	if p, ok := f.pipes[rank]; ok {
		pipes[rank] = p
	}
	return pipes, nil
}

// childAbove finds the registered child whose subtree holds daemon d.
func (f *Fanout) childAbove(d int) []int {
	seen := map[int]bool{} // a parent function that loops ends here
	for x := d; x >= 0 && !seen[x]; x = f.parent(x) {
		if _, ok := f.opens[x]; ok {
			return []int{x}
		}
		seen[x] = true
	}
	return nil
}

// writeLocal writes to a rank's stdin; a rank that closed its input or
// exited is dropped, and EOF closes the pipe.
func (f *Fanout) writeLocal(rank int, p *os.File, c Chunk) {
	if !c.EOF {
		if _, err := p.Write(c.Data); err == nil {
			return
		}
	}
	f.mu.Lock()
	delete(f.pipes, rank)
	f.mu.Unlock()
	p.Close()
}

func (f *Fanout) forward(child int, c Chunk) error {
	s, err := f.sender(child)
	if err != nil || s == nil {
		return err
	}
	return s.Send(c)
}

func (f *Fanout) sender(child int) (*Sender, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.children[child]; ok {
		return s, nil
	}
	open, ok := f.opens[child]
	if !ok {
		return nil, nil // the child never came up: the job is ending anyway
	}
	w, err := open()
	if err != nil {
		return nil, err
	}
	s := NewSender(w)
	f.children[child], f.closers[child] = s, w
	return s, nil
}

// Close closes every local pipe and child stream.
func (f *Fanout) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for r, p := range f.pipes {
		p.Close()
		delete(f.pipes, r)
	}
	for c, w := range f.closers {
		w.Close()
		delete(f.closers, c)
	}
}
