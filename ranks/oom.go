package ranks

import (
	"syscall"

	"prsh/errmgr/status"
)

// A rank killed by SIGKILL may have been killed by the kernel's OOM
// killer, which users meet more than any other fault and act on
// differently (less memory per node, more nodes). Where the job cgroup
// counts OOM kills (memory.events, cgroup v2's memory controller), a
// rank is said to be the OOM killer's when it died of SIGKILL and the
// count rose during its life by a kill that no other rank's end has been
// put down to, and the rank had not been killed by its node's own
// teardown or ended with its guard: a rank reaped after that SIGKILL
// died of it, even when an OOM kill of another rank is not yet put down
// to anyone (that rank's guard reports later). Where there is no such count (cgroup v1, a unified
// hierarchy without the memory controller), the kernel's log names the
// victim's pid (guard.KernelLoggedOOMKill), read only for a rank that
// died of a SIGKILL not the node's; where the log cannot be read the node
// says nothing of memory.

// oomCount is where a rank's OOM kills are counted, and the count when
// it started.
type oomCount struct {
	kills  func() (int, error)
	before int
	// killedByNode: the node SIGKILLed the rank while it ran (its
	// teardown, or its guard's end, whose status the rank is given).
	killedByNode bool
}

// oomCountBefore reads the job cgroup's count of OOM kills before a rank
// starts; ok is false where there is none. Called under the Node's lock.
func (n *Node) oomCountBefore() (count oomCount, ok bool) {
	if n.cgroup == nil || n.oomUncounted {
		return oomCount{}, false
	}
	before, err := n.cgroup.OOMKills()
	n.oomUncounted = err != nil
	return oomCount{kills: n.cgroup.OOMKills, before: before}, err == nil
}

// describe says how the rank ended, naming the OOM killer where the job
// cgroup, or the kernel's log, says it killed the rank.
func (n *Node) describe(r *rank, ws syscall.WaitStatus) string {
	if ws.Signaled() && ws.Signal() == syscall.SIGKILL && n.oomKilled(r) {
		return status.DescribeOOMKill(ws)
	}
	return status.Describe(ws)
}

// oomKilled says whether the OOM killer killed the rank: by the job
// cgroup's count where there is one, by the kernel's log otherwise.
func (n *Node) oomKilled(r *rank) bool {
	n.mu.Lock()
	killed, counted := n.countedOOMKill(r)
	pid := r.pid
	n.mu.Unlock()
	if counted {
		return killed
	}
	return pid != 0 && n.kernelLoggedOOMKill(pid)
}

// countedOOMKill says, where the job cgroup counts OOM kills or the
// node's teardown killed the rank (counted), whether an OOM kill during
// the rank's life is left to explain its end, and puts it down to the
// rank. Called under the Node's lock.
func (n *Node) countedOOMKill(r *rank) (killed, counted bool) {
	if r.oom.killedByNode {
		return false, true
	}
	if r.oom.kills == nil {
		return false, false
	}
	now, err := r.oom.kills()
	if err != nil {
		return false, false
	}
	explained := max(r.oom.before, n.oomExplained)
	if now <= explained {
		return false, true
	}
	n.oomExplained = explained + 1
	return true, true
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
