package guard

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// Out of memory, the kernel kills the process it scores worst: mostly
// the largest, shifted by its oom_score_adj (-1000 to 1000). The rank
// should go before its guard and its daemon, which would take the whole
// job, and the node's other ranks, with them. So the guard raises its
// own adjustment just before it starts the rank, which inherits it, and
// lowers its own back at once. Any process may raise its own, and lower
// it back as far as the least it inherited, so this works for an
// ordinary user as for root, who gains no more: the daemon and the guard
// keep what they were given.
//
// rankOOMScoreRaise puts the rank ahead of its guard and daemon unless
// they hold half the node's memory more than it does, and leaves a
// larger process outside the job still ahead of it.
const rankOOMScoreRaise = 500

// oomScoreAdjMax is the kernel's largest adjustment.
const oomScoreAdjMax = 1000

const ownOOMScoreAdj = "/proc/self/oom_score_adj"

// oomScore is the guard's own oom_score_adj, its file kept open and the
// adjustment it was given read once (nothing but the guard changes it):
// reading and writing the file anew cost three opens a rank. It stays
// raised while any start is under way (starts run side by side).
type oomScore struct {
	mu     sync.Mutex
	opened bool
	f      *os.File // nil where the file cannot be read or written (a read-only /proc)
	own    int
	raised int // starts it is raised for
}

// raise raises the guard's oom_score_adj for the rank it is about to
// start, and returns what lowers it back. Where that cannot be done the
// rank runs at the guard's.
func (o *oomScore) raise() (lower func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.opened {
		o.opened = true
		if own, err := readOOMScoreAdj(ownOOMScoreAdj); err == nil {
			o.own = own
			o.f, _ = os.OpenFile(ownOOMScoreAdj, os.O_WRONLY, 0)
		}
	}
	if o.f == nil || o.raised == 0 && o.write(min(o.own+rankOOMScoreRaise, oomScoreAdjMax)) != nil {
		return func() {}
	}
	o.raised++
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.raised--; o.raised == 0 {
			o.write(o.own)
		}
	}
}

func (o *oomScore) write(adj int) error {
	_, err := o.f.WriteAt([]byte(strconv.Itoa(adj)), 0)
	return err
}

func readOOMScoreAdj(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
