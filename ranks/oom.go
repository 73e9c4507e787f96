package ranks

import (
	"syscall"

	"prsh/errmgr/status"
)

// A rank killed by SIGKILL may have been killed by the kernel's OOM
// killer, which users meet more than any other fault and act on
// differently (less memory per node, more nodes). The kernel says so
// only in the job cgroup's count of OOM kills (memory.events), where the
// memory controller is enabled for it: a rank is said to be the OOM
// killer's when it died of SIGKILL and the count rose during its life by
// a kill that no other rank's end has been put down to, and the rank had
// not been killed by its node's own teardown: a rank reaped after that
// SIGKILL died of it, even when an OOM kill of another rank is not yet
// put down to anyone (that rank's guard reports later). Elsewhere the
// node says nothing of memory: the kernel's other records (its log, the
// machine-wide count in /proc/vmstat, a cgroup v1 memory group shared
// with the rest of the node) do not say whose process it was.

// oomCount is where a rank's OOM kills are counted, and the count when
// it started.
type oomCount struct {
	kills  func() (int, error)
	before int
	// killedByNode: the node's teardown SIGKILLed the rank while it ran.
	killedByNode bool
}

// oomCountBefore reads the job cgroup's count of OOM kills before a rank
// starts; ok is false where there is none.
func (n *Node) oomCountBefore() (count oomCount, ok bool) {
	if n.cgroup == nil || n.oomUncounted {
		return oomCount{}, false
	}
	before, err := n.cgroup.OOMKills()
	n.oomUncounted = err != nil
	return oomCount{kills: n.cgroup.OOMKills, before: before}, err == nil
}

// describe says how the rank ended, naming the OOM killer where the job
// cgroup says it killed the rank.
func (n *Node) describe(r *rank, ws syscall.WaitStatus) string {
	if ws.Signaled() && ws.Signal() == syscall.SIGKILL && n.oomKilled(r) {
		return status.DescribeOOMKill(ws)
	}
	return status.Describe(ws)
}

// oomKilled says whether an OOM kill during the rank's life is left to
// explain its end, and puts it down to the rank.
func (n *Node) oomKilled(r *rank) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r.oom.kills == nil || r.oom.killedByNode {
		return false
	}
	now, err := r.oom.kills()
	if err != nil {
		return false
	}
	explained := max(r.oom.before, n.oomExplained)
	if now <= explained {
		return false
	}
	n.oomExplained = explained + 1
	return true
}

// noteTeardownKill marks the ranks that run, or are still to start, as
// the node SIGKILLs them (and their guard, whose own SIGKILL becomes the
// status of the ranks it had not reported): their SIGKILL is the node's.
// A rank already exiting died of something else, perhaps the OOM killer.
// Called under the Node's lock.
func (n *Node) noteTeardownKill() {
	for _, r := range n.ranks {
		if !r.exited && (r.pid == 0 || !r.guard.RankExiting(r.pid)) {
			r.oom.killedByNode = true
		}
	}
}
