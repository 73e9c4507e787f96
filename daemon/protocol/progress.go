package protocol

import (
	"fmt"
	"strings"

	"prsh/topo"
)

// Launch progress: while daemons are still to call back, each orted with
// children tells its parent, at most once a PendingReportMS, how many
// daemons of its subtree are missing and names a few (Pending), and
// mpirun turns what its children said into one line for the user
// (Waiting). Phase 2 cannot tell it alone: a subtree's addresses go up
// only once all of it is up, so until then mpirun knows nothing of who,
// in it, is missing. A launch whose subtrees are up within the first
// period sends no Pending at all, and the Addrs that reports a subtree
// up ends its reports.
const (
	// PendingReportMS is how often an orted whose subtree is not all up
	// reports it (only when what it would say changed).
	PendingReportMS = 1000
	// WaitingShowMS is how long a launch may take before mpirun shows
	// who it waits for; WaitingEveryMS, how often it says it again.
	WaitingShowMS  = 3000
	WaitingEveryMS = 1000
	// MaxSlow bounds the missing daemons a Pending (and the line) names.
	MaxSlow = 5
)

// startProgress sets the first progress timer: mpirun's, and that of an
// orted with a subtree to wait for.
func (m *Machine) startProgress() {
	if ms := m.role.firstReportMS(); ms > 0 {
		m.emit(SetTimer{Timer{Kind: ProgressTimer}, ms})
	}
}

// progressDue reports the daemons still missing below this one, and sets
// the timer again, until the subtree is up or the job ends.
func (m *Machine) progressDue() {
	if m.ending() || m.role.subtreeUp() {
		return
	}
	m.role.reportPending(m.pendingBelow())
}

// checkSubtreeUp stops the reports once the subtree is up; mpirun
// removes its line.
func (m *Machine) checkSubtreeUp() {
	if m.progressOver || !m.role.subtreeUp() {
		return
	}
	m.progressOver = true
	if m.role.firstReportMS() > 0 {
		m.emit(CancelTimer{Timer{Kind: ProgressTimer}})
	}
	m.role.waitOver()
}

// pendingBelow is what this daemon knows of the daemons below it that
// have not called back: a child not connected yet stands for its whole
// subtree; a connected one, for what it last reported (its subtree but
// itself until it reports).
func (m *Machine) pendingBelow() Pending {
	var p Pending
	for _, c := range m.sortedChildren() {
		switch {
		case c.failed || m.flood.Reported(c.id):
		case !c.calledBack():
			p.Missing += m.subtreeSize(c)
			p.Slow = append(p.Slow, c.id)
		case c.pending != nil:
			p.Missing += c.pending.Missing
			p.Slow = append(p.Slow, c.pending.Slow...)
		default:
			p.Missing += m.subtreeSize(c) - 1
		}
	}
	if len(p.Slow) > MaxSlow {
		p.Slow = p.Slow[:MaxSlow]
	}
	return p
}

func (m *Machine) subtreeSize(c *child) int {
	if c.size == 0 {
		c.size = topo.SubtreeSize(m.spawnTree, c.id)
	}
	return c.size
}

// pendingFrom keeps a connected child's report, bounded as the wire
// promises.
func (m *Machine) pendingFrom(peer int, p Pending) {
	c, ok := m.children[peer]
	if !ok || !c.calledBack() {
		return
	}
	p.Missing = max(p.Missing, 0)
	if len(p.Slow) > MaxSlow {
		p.Slow = p.Slow[:MaxSlow]
	}
	c.pending = &p
}

func samePending(a, b Pending) bool {
	if a.Missing != b.Missing || len(a.Slow) != len(b.Slow) {
		return false
	}
	for i := range a.Slow {
		if a.Slow[i] != b.Slow[i] {
			return false
		}
	}
	return true
}

// waitingLine words mpirun's progress: "mpirun: 61 of 64 daemons called
// back; waiting for node005, node017, node230".
func (r *rootState) waitingLine(p Pending) string {
	m, skipped := r.m, r.skipped
	nodes := m.job.Daemons - 1
	up := max(nodes-p.Missing-len(skipped), 0)
	var b strings.Builder
	fmt.Fprintf(&b, "mpirun: %d of %d daemons called back", up, nodes)
	if len(skipped) > 0 {
		fmt.Fprintf(&b, " (%d skipped)", len(skipped))
	}
	names := make([]string, len(p.Slow))
	for i, id := range p.Slow {
		names[i] = m.hostOf(id)
	}
	more := p.Missing - len(names)
	switch {
	case len(names) == 0:
		fmt.Fprintf(&b, "; waiting for %d", p.Missing)
	case more > 0:
		fmt.Fprintf(&b, "; waiting for %s and %d more", strings.Join(names, ", "), more)
	default:
		fmt.Fprintf(&b, "; waiting for %s", strings.Join(names, ", "))
	}
	return b.String()
}
