package ranks

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/ranks/guard"
)

// Node is the Starter of a node's real ranks: each a process under its
// guard, in the job's cgroup where there can be one.
type Node struct {
	log    hclog.Logger
	report func(Event)

	mu    sync.Mutex // the ranks' state, which their goroutines change
	ranks map[int]*rank

	cgroup      *guard.Cgroup // the job's cgroup on this node, where there can be one
	cgroupHolds bool          // a guard has started in the cgroup: the kernel can start processes there
	// oomExplained is how many of the job cgroup's OOM kills explain
	// a rank's end (oom.go).
	oomExplained int
	// oomUncounted: the job cgroup counts no OOM kills (no memory
	// controller), so the count is not asked for again at each start.
	oomUncounted bool
}

// rank is one started rank.
type rank struct {
	id        int
	guard     *guard.Guard
	reaped    bool
	groupGone bool // reaped, and nothing left in its process group
	openPipes int
	oom       oomCount // its OOM kills, where the job cgroup counts them
}

// NewNode makes the Starter of this node's ranks; report hears every
// Event after a rank's start.
func NewNode(log hclog.Logger, report func(Event)) *Node {
	return &Node{log: log, report: report, ranks: map[int]*rank{}}
}

// Signal signals every rank's process group (Starter).
func (n *Node) Signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if sig == syscall.SIGKILL {
		n.noteTeardownKill()
	}
	if sig == syscall.SIGKILL && n.cgroup != nil {
		n.cgroup.Kill()
	}
	for _, r := range n.ranks {
		r.signalGroup(sig)
		if sig == syscall.SIGKILL {
			r.guard.End()
		}
	}
}

// Live says whether the rank runs and has not begun to exit (Starter).
// Whoever saw the rank's socket close learned that no earlier than the
// kernel marked the rank exiting, so the answer is exact for such a
// witness.
func (n *Node) Live(id int) bool {
	n.mu.Lock()
	r, ok := n.ranks[id]
	reaped := ok && r.reaped
	n.mu.Unlock()
	return ok && !reaped && !r.guard.RankExiting()
}

// Close removes the job's cgroup, killing what is left in it (Starter).
func (n *Node) Close() {
	if n.cgroup == nil {
		return
	}
	if err := n.cgroup.Remove(2 * time.Second); err != nil {
		n.log.Warn("cannot remove the job cgroup", "dir", n.cgroup.Dir(), "error", err)
	}
}

// signalGroup signals the rank's process group unless it is known empty.
// Once a reaped rank's group is found empty it is never signalled again:
// its number is free for the system to give to someone else's group.
// Called under the Node's lock.
func (r *rank) signalGroup(sig syscall.Signal) {
	if r.groupGone {
		return
	}
	if err := syscall.Kill(-r.guard.Cmd.Process.Pid, sig); errors.Is(err, syscall.ESRCH) && r.reaped {
		r.groupGone = true
	}
}

// reaped notes that the rank ended and whether its group is empty (its
// number may then be reused).
func (n *Node) reaped(r *rank) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r.reaped = true
	r.signalGroup(0)
}

// pipeClosed counts one of the rank's output pipes read to its end, and
// reports the rank drained after the last.
func (n *Node) pipeClosed(r *rank) {
	n.mu.Lock()
	r.openPipes--
	drained := r.openPipes == 0
	n.mu.Unlock()
	if drained {
		n.report(Drained{Rank: r.id})
	}
}

// openCgroup makes the job's cgroup, where cgroup v2 is delegated to us;
// elsewhere the guards alone contain the ranks.
func (n *Node) openCgroup() {
	if n.cgroup != nil {
		return
	}
	cg, err := guard.NewCgroup()
	if err != nil {
		n.log.Debug("no job cgroup: the rank guards alone contain the ranks", "error", err)
		return
	}
	n.log.Debug("job cgroup", "dir", cg.Dir())
	n.cgroup = cg
}

// checkCgroup learns from the guard just started whether the kernel
// starts processes in the job's cgroup (Linux 5.7 and later, clone3 not
// filtered). If the first guard could not start in it, the node does
// without; a later guard that could not (a transient fork failure) runs
// outside it, beside the guards already in it.
func (n *Node) checkCgroup(g *guard.Guard) {
	switch {
	case n.cgroup == nil:
	case g.OutsideCgroup == nil:
		n.cgroupHolds = true
	case !n.cgroupHolds:
		n.log.Debug("no job cgroup: cannot start a process in it (Linux < 5.7, or clone3 filtered); the rank guards alone contain the ranks", "error", g.OutsideCgroup)
		n.Close()
		n.cgroup = nil
	default:
		n.log.Warn("a rank's guard runs outside the job cgroup", "error", g.OutsideCgroup)
	}
}
