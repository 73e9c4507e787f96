package ranks

import (
	"syscall"

	"prsh/errmgr"
	"prsh/errmgr/status"
	"prsh/ranks/guard"
)

// heard passes on a report of the guard's: an answer to a start to its
// waiting Start, an end to the daemon.
func (n *Node) heard(rep guard.Report) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.ranks[rep.Rank]
	if r == nil || r.exited {
		return
	}
	switch rep.Kind {
	case guard.Running:
		r.pid = rep.Pid
		answer(r, rep)
	case guard.Failed:
		answer(r, rep)
	case guard.Exited:
		r.exited = true
		go n.ended(r, rep.Wait)
	}
}

// answer gives a rank its start's answer, unless it has one.
func answer(r *rank, rep guard.Report) {
	select {
	case r.answer <- rep:
	default:
	}
}

// guardEnded sees to the ranks of a guard that ended: none it was not
// asked to kill, unless killed itself. A rank it never answered for did
// not start; one it did not report ended as the guard did, its process
// group killed.
func (n *Node) guardEnded(g *guard.Guard, ws syscall.WaitStatus) {
	n.mu.Lock()
	defer n.mu.Unlock()
	why := guardEndedWhy(g, ws)
	for _, r := range n.ranks {
		switch {
		case r.guard != g || r.exited:
		case r.pid == 0:
			answer(r, guard.Report{Kind: guard.Failed, Rank: r.id, Status: errmgr.StatusFailed, Err: why})
		default:
			r.exited = true
			r.oom.killedByNode = true // the status is the guard's; the kill is the node's
			r.signalGroup(syscall.SIGKILL)
			go n.ended(r, ws)
		}
	}
}

// guardEndedWhy says how guard g ended, in its own words where it said
// any (why it could not serve: a guard of another prsh, a crash).
func guardEndedWhy(g *guard.Guard, ws syscall.WaitStatus) string {
	why := "the ranks' guard " + status.Describe(ws)
	if said := g.Said(); said != "" {
		why += ": " + said
	}
	return why
}

// ended reports a rank's end, once its start is settled and the
// daemon's hook on its end has run.
func (n *Node) ended(r *rank, ws syscall.WaitStatus) {
	<-r.settled
	st := status.ExitStatus(ws)
	if r.att.Ended != nil {
		r.att.Ended(st)
	}
	n.reaped(r)
	n.report(Exited{Rank: r.id, Status: st, How: n.describe(r, ws)})
}
