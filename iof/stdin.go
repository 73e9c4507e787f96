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

// StdinTree passes mpirun's standard input down the spawn tree to the
// ranks it is for: a plain mpirun's job 0, or each DVM job's (a chunk's
// Job), whose input streams share each child's. Writes to a rank's pipe
// and to a child's stream happen outside the lock: a rank that does not
// read its input stalls the input, never the daemon's event loop or
// anybody's output.
type StdinTree struct {
	mu       sync.Mutex
	self     int
	parent   func(daemon int) int // in the spawn tree; -1 above the root
	rankNode map[int][]int        // the daemon of each rank, by job
	opens    map[int]func() (io.WriteCloser, error)
	pipes    map[jobRank]*os.File // local ranks' stdin
	children map[int]*Sender      // streams to children, opened on first use
	closers  map[int]io.Closer
}

// jobRank names a rank of a job.
type jobRank struct{ job, rank int }

// NewStdinTree returns the stdin tree of daemon self; parent gives the
// spawn tree, in which the input for a daemon goes down through the direct
// child above it (a child adopted from a skipped node included).
func NewStdinTree(self int, parent func(daemon int) int) *StdinTree {
	return &StdinTree{
		self: self, parent: parent, rankNode: map[int][]int{}, opens: map[int]func() (io.WriteCloser, error){},
		pipes: map[jobRank]*os.File{}, children: map[int]*Sender{}, closers: map[int]io.Closer{},
	}
}

// SetRanks records where the ranks of a plain mpirun's job run.
func (t *StdinTree) SetRanks(rankNode []int) { t.SetJobRanks(0, rankNode) }

// SetJobRanks records where job's ranks run.
func (t *StdinTree) SetJobRanks(job int, rankNode []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rankNode[job] = rankNode
}

// ForgetJob lets go of a job that is over: its ranks' pipes are closed,
// and input for it is dropped from now on.
func (t *StdinTree) ForgetJob(job int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.rankNode, job)
	for k, p := range t.pipes {
		if k.job == job {
			p.Close()
			delete(t.pipes, k)
		}
	}
}

// AddChild registers a direct child and how to open a stream to it.
func (t *StdinTree) AddChild(id int, open func() (io.WriteCloser, error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.opens[id] = open
}

// AddRank registers the write end of the stdin pipe of a local rank of a
// plain mpirun's job.
func (t *StdinTree) AddRank(rank int, pipe *os.File) { t.Job(0).AddRank(rank, pipe) }

// JobInput takes the stdin pipes of one job's local ranks.
type JobInput struct {
	t   *StdinTree
	job int
}

// Job is where job's local ranks' stdin pipes are registered.
func (t *StdinTree) Job(job int) JobInput { return JobInput{t, job} }

// AddRank registers the write end of a local rank's stdin pipe; one for
// a job already forgotten is closed.
func (in JobInput) AddRank(rank int, pipe *os.File) {
	in.t.mu.Lock()
	defer in.t.mu.Unlock()
	if _, ok := in.t.rankNode[in.job]; !ok {
		pipe.Close()
		return
	}
	in.t.pipes[jobRank{in.job, rank}] = pipe
}

// Send delivers a chunk to the local ranks it is for and passes it on to
// the children on its way.
func (t *StdinTree) Send(c Chunk) error {
	pipes, kids := t.targets(c.Job, c.Rank)
	for rank, p := range pipes {
		t.writeLocal(rank, p, c)
	}
	for _, child := range kids {
		if err := t.forward(child, c); err != nil {
			return err
		}
	}
	return nil
}

func (t *StdinTree) targets(job, rank int) (map[jobRank]*os.File, []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pipes := map[jobRank]*os.File{}
	rankNode, ok := t.rankNode[job]
	if !ok {
		return nil, nil // a job over here, or not yet here
	}
	if rank == AllRanks {
		for k, p := range t.pipes {
			if k.job == job {
				pipes[k] = p
			}
		}
		kids := make([]int, 0, len(t.opens))
		for id := range t.opens {
			kids = append(kids, id)
		}
		return pipes, kids
	}
	if rank < 0 || rank >= len(rankNode) {
		return nil, nil
	}
	if d := rankNode[rank]; d != t.self {
		return nil, t.childAbove(d)
	}
	if p, ok := t.pipes[jobRank{job, rank}]; ok {
		pipes[jobRank{job, rank}] = p
	}
	return pipes, nil
}

// childAbove finds the registered child whose subtree holds daemon d.
func (t *StdinTree) childAbove(d int) []int {
	seen := map[int]bool{} // a parent function that loops ends here
	for x := d; x >= 0 && !seen[x]; x = t.parent(x) {
		if _, ok := t.opens[x]; ok {
			return []int{x}
		}
		seen[x] = true
	}
	return nil
}

// writeLocal writes to a rank's stdin; a rank that closed its input or
// exited is dropped, and EOF closes the pipe.
func (t *StdinTree) writeLocal(rank jobRank, p *os.File, c Chunk) {
	if !c.EOF {
		if _, err := p.Write(c.Data); err == nil {
			return
		}
	}
	t.mu.Lock()
	delete(t.pipes, rank)
	t.mu.Unlock()
	p.Close()
}

func (t *StdinTree) forward(child int, c Chunk) error {
	s, err := t.sender(child)
	if err != nil || s == nil {
		return err
	}
	return s.Send(c)
}

func (t *StdinTree) sender(child int) (*Sender, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.children[child]; ok {
		return s, nil
	}
	open, ok := t.opens[child]
	if !ok {
		return nil, nil // the child never came up: the job is ending anyway
	}
	w, err := open()
	if err != nil {
		return nil, err
	}
	s := NewSender(w)
	t.children[child], t.closers[child] = s, w
	return s, nil
}

// Close closes every local pipe and child stream.
func (t *StdinTree) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for r, p := range t.pipes {
		p.Close()
		delete(t.pipes, r)
	}
	for c, w := range t.closers {
		w.Close()
		delete(t.closers, c)
	}
}
