package ranks

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/ranks/guard"
)

// Node is the Starter of one job's real ranks on this node: each a
// process started by the node's guard (NodeGuard), in the job's cgroup
// where there can be one.
type Node struct {
	log    hclog.Logger
	report func(Event)
	host   *NodeGuard
	job    int  // the job's number on the guard
	handed bool // a rank was handed to the guard: its end is the guard's to kill
	killed bool // the guard was asked to kill the job (once is enough)

	mu    sync.Mutex // the ranks' state, which their goroutines change
	ranks map[int]*rank

	cgroup *guard.Cgroup // the job's cgroup on this node, where there can be one
	// oomExplained is how many of the job cgroup's OOM kills explain
	// a rank's end (oom.go).
	oomExplained int
	// oomUncounted: the job cgroup counts no OOM kills (no memory
	// controller), so the count is not asked for again at each start.
	oomUncounted bool
	// kernelLoggedOOMKill looks for the OOM killer's kill of a pid in
	// the kernel's log, where no cgroup counts OOM kills.
	kernelLoggedOOMKill func(pid int) bool
}

// rank is one rank handed to the guard.
type rank struct {
	id    int
	guard *guard.Guard
	att   Attachment
	// answer is the guard's answer to its start.
	answer chan guard.Report
	// settled is closed once its start is settled: the daemon's hook
	// on its start or failure has run.
	settled   chan struct{}
	pid       int  // its process, and process group, once it runs
	exited    bool // the guard reported its end, or itself ended
	reaped    bool // its end has been seen to
	groupGone bool // reaped, and nothing left in its process group
	openPipes int
	oom       oomCount // its OOM kills, where the job cgroup counts them
}

// Signal signals every rank's process group (Starter); SIGKILL also
// kills the job's cgroup and has the guard kill all the job started.
func (n *Node) Signal(sig syscall.Signal) {
	n.mu.Lock()
	if sig == syscall.SIGKILL {
		n.noteTeardownKill()
		if n.cgroup != nil {
			n.cgroup.Kill()
		}
	}
	for _, r := range n.ranks {
		r.signalGroup(sig)
	}
	n.mu.Unlock()
	if sig == syscall.SIGKILL {
		n.killOnGuard()
	}
}

// killOnGuard has the guard kill the job's ranks and all they started,
// if it was handed any, once: the guard and the other jobs go on.
func (n *Node) killOnGuard() {
	if g := n.host.current(); g != nil && n.handed && !n.killed {
		n.killed = g.KillJob(n.job) == nil
	}
}

// Live says whether the rank runs and has not begun to exit (Starter).
// Whoever saw the rank's socket close learned that no earlier than the
// kernel marked the rank exiting, so the answer is exact for such a
// witness.
func (n *Node) Live(id int) bool {
	n.mu.Lock()
	r, ok := n.ranks[id]
	running := ok && r.pid != 0 && !r.exited
	n.mu.Unlock()
	return running && !r.guard.RankExiting(r.pid)
}

// Close kills what is left of the job (Starter): the guard kills all its
// ranks started, and the job's cgroup is removed, killing what is left
// in it. The node's guard goes on, for the daemon's next job.
func (n *Node) Close() {
	n.killOnGuard()
	n.host.forget(n.job)
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
	if r.groupGone || r.pid == 0 {
		return
	}
	if err := syscall.Kill(-r.pid, sig); errors.Is(err, syscall.ESRCH) && r.reaped {
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

// cgroupDir is the job's cgroup, "" where it has none.
func (n *Node) cgroupDir() string {
	if n.cgroup == nil {
		return ""
	}
	return n.cgroup.Dir()
}

// openCgroup makes the job's cgroup, where cgroup v2 is delegated to us;
// elsewhere the guard alone contains the ranks.
func (n *Node) openCgroup() {
	if n.cgroup != nil {
		return
	}
	cg, err := guard.NewCgroup()
	if err != nil {
		n.log.Debug("no job cgroup: the guard alone contains the ranks", "error", err)
		return
	}
	n.log.Debug("job cgroup", "dir", cg.Dir())
	n.cgroup = cg
}
