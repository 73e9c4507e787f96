package protocol

import (
	"maps"
	"slices"

	"prsh/errmgr"
)

// startRanks starts this daemon's share of the ranks.
func (m *Machine) startRanks() {
	mine := m.localRanks()
	for _, r := range mine {
		m.ranks[r] = &rank{}
	}
	m.emit(StartRanks{App: m.app, Ranks: mine})
	m.reach(Started)
	m.checkExited()
}

// localRanks lists the ranks the job map places on this daemon.
func (m *Machine) localRanks() []int {
	nodes := m.app.RankNode
	if m.app.RanksByNode {
		first, _ := slices.BinarySearch(nodes, m.self)
		last, _ := slices.BinarySearch(nodes, m.self+1)
		var mine []int
		for r := first; r < last; r++ {
			mine = append(mine, r)
		}
		return mine
	}
	var mine []int
	for r, d := range nodes {
		if d == m.self {
			mine = append(mine, r)
		}
	}
	return mine
}

func (m *Machine) rankNotStarted(e RankNotStarted) {
	r, ok := m.ranks[e.Rank]
	if !ok {
		return
	}
	r.reaped, r.drained = true, true
	m.fail(m.failure(e.Status, "rank %d: %s", e.Rank, e.Err))
	m.checkExited()
}

func (m *Machine) rankExited(e RankExited) {
	r, ok := m.ranks[e.Rank]
	if !ok || r.reaped {
		return
	}
	r.reaped = true
	switch {
	case m.ending():
	case e.Status != 0:
		m.fail(m.failure(e.Status, "rank %d %s", e.Rank, e.How))
	case r.pmiErr != "":
		m.fail(m.failure(errmgr.StatusFailed, "rank %d broke the PMI protocol: %s", e.Rank, r.pmiErr))
	case r.pmi && !r.finalized:
		m.fail(m.failure(errmgr.StatusFailed, "rank %d exited with status 0 without finalizing MPI (PMI)", e.Rank))
	}
	m.checkExited()
}

// aborted ends the job as a rank asked (MPI_Abort), with its status.
func (m *Machine) aborted(e Aborted) {
	if _, ok := m.ranks[e.Rank]; !ok {
		return
	}
	line := m.failure(e.Status, "rank %d called MPI_Abort with status %d", e.Rank, e.Status)
	if e.Msg != "" {
		line.Msg += ": " + e.Msg
	}
	m.fail(line)
}

func (m *Machine) checkExited() {
	if m.launch != ranksStarted || m.milestones[Exited].local {
		return
	}
	for _, r := range m.ranks {
		if !r.reaped {
			return
		}
	}
	m.reach(Exited)
}

// fail reports a failure to mpirun, which ends the job on the first one.
func (m *Machine) fail(f Failure) { m.role.fail(f) }

// dropChild stops every reduction from waiting for a child that failed.
func (m *Machine) dropChild(id int) {
	for _, r := range m.milestones {
		r.drop(id)
	}
	for _, seq := range slices.Sorted(maps.Keys(m.acks)) {
		m.acks[seq].drop(id)
		m.checkAck(seq)
	}
	m.collectives(m.coll.ChildFailed(id))
}

func (m *Machine) reach(kind int) {
	m.milestones[kind].local = true
	m.checkMilestone(kind)
}

func (m *Machine) checkMilestones() {
	for k := range m.milestones {
		m.checkMilestone(k)
	}
}

// checkMilestone reports a milestone up the spawn tree once this daemon
// and every live direct child have reached it; at mpirun it moves the job
// on.
func (m *Machine) checkMilestone(kind int) {
	if m.milestones[kind].ready() {
		m.role.milestone(kind)
	}
}

// signal delivers a signal to every rank in this subtree: down the spawn
// tree, then to the local ranks' process groups. With Ack, the subtree
// answers once every daemon in it has delivered it.
func (m *Machine) signal(s Signal) {
	var sentTo []int
	for _, c := range m.sortedChildren() {
		if c.linked() {
			m.emit(Send{c.link, s})
			sentTo = append(sentTo, c.id)
		}
	}
	m.emit(SignalRanks{s.Sig})
	if s.Ack {
		r := newReduction(sentTo)
		r.local = true
		m.acks[s.Seq] = r
		m.checkAck(s.Seq)
	}
}

func (m *Machine) acked(child, seq int) {
	if r, ok := m.acks[seq]; ok && r.takes(child) {
		r.add(child)
		m.checkAck(seq)
	}
}

func (m *Machine) checkAck(seq int) {
	if !m.acks[seq].ready() {
		return
	}
	delete(m.acks, seq)
	m.role.signalDelivered(seq)
}

func (m *Machine) timerFired(t Timer) {
	switch t.Kind {
	case CallbackTimer:
		m.callbackExpired(t.ID)
	case GraceTimer:
		m.emit(SignalRanks{SIGKILL})
	case ProgressTimer:
		m.progressDue()
	case DrainTimer, JobTimer, StopTimer:
		if m.root != nil {
			m.root.timerFired(t)
		}
	}
}

// teardown ends the job in this daemon's subtree: pass it on, stop the
// ranks, then wait for everything to drain (maybeFinish).
func (m *Machine) teardown(kill bool) {
	if m.ending() {
		return
	}
	m.moveEnd(jobEnding)
	m.coll.End()
	m.role.waitOver()
	m.passTeardown(kill)
	if kill {
		m.emit(SignalRanks{SIGTERM})
		m.emit(SetTimer{Timer{Kind: GraceTimer}, m.job.KillGraceMS})
	} else {
		m.emit(SignalRanks{SIGKILL}) // what the ranks left behind
	}
	if m.root != nil {
		m.emit(SetTimer{Timer{Kind: DrainTimer}, m.job.Timeouts.DrainMS})
	}
	m.maybeFinish()
}

// passTeardown tells each connected child to end; a child that never
// connected has its session closed.
func (m *Machine) passTeardown(kill bool) {
	for _, c := range m.sortedChildren() {
		switch {
		case c.linked():
			m.emit(Send{c.link, Teardown{Kill: kill}})
		case c.running():
			m.stopDaemon(c)
		}
	}
}

// stopDaemon ends child c's session; a child that may not be able to end
// by itself (silent, or it never called back) is killed unless it may
// hold ranks: then their guards kill it (see ranks/guard), and a kill of
// its session's process group would take the guards before they act.
func (m *Machine) stopDaemon(c *child) {
	hung := c.call == callSilent || !c.calledBack()
	m.emit(StopDaemon{ID: c.id, Kill: hung && !m.mayHoldRanks(c.id)})
}

// mayHoldRanks says whether daemon id may have started ranks: the Launch
// here places some on it, or no Launch came here and one may have reached
// it around this daemon (from mpirun, the source, or another routing
// parent). A daemon that never called back got no job, so no Launch.
func (m *Machine) mayHoldRanks(id int) bool {
	if c, ok := m.children[id]; ok && !c.calledBack() {
		return false
	}
	if m.launch == launchAwaited {
		return m.root == nil && !slices.Contains(m.routing.Fanout(m.self), id)
	}
	return slices.Contains(m.app.RankNode, id)
}

// maybeFinish exits once the job is over here: ranks reaped, their output
// and the children's output passed on, children gone.
func (m *Machine) maybeFinish() {
	if m.end != jobEnding {
		return
	}
	for _, r := range m.ranks {
		if !r.reaped || !r.drained {
			return
		}
	}
	for _, c := range m.children {
		if !c.drained() {
			return
		}
	}
	m.exit(Exit{Status: m.role.exitStatus()})
}

func (m *Machine) exit(e Exit) {
	m.moveEnd(jobFinished)
	m.emit(e)
}

// lifelineLost ends an orted whose parent is gone: nothing may outlive it.
func (m *Machine) lifelineLost(why string) {
	m.warn("exiting: %s", why)
	m.emit(SignalRanks{SIGKILL})
	if m.end == jobRunning {
		m.moveEnd(jobEnding)
	}
	m.exit(Exit{Status: 1})
}

// ending says the teardown began (or is over).
func (m *Machine) ending() bool { return m.end != jobRunning }

// interrupted passes a signal delivered to mpirun on to its role; the
// driver of an orted delivers none.
func (m *Machine) interrupted(e Interrupt) {
	if m.root == nil {
		m.warn("unexpected %T at an orted", e)
		return
	}
	m.root.interrupt(e.Sig, e.Name)
}
