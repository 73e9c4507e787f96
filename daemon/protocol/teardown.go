package protocol

import "slices"

// The end of the job at this daemon: the teardown passed down the spawn
// tree, the ranks stopped, the children's sessions stopped, and the exit
// once everything has drained; or at once when the lifeline is lost.

// ending says the teardown began (or is over).
func (m *Machine) ending() bool { return m.end != jobRunning }

// teardown ends the job in this daemon's subtree: pass it on, stop the
// ranks, then wait for everything to drain (maybeFinish).
func (m *Machine) teardown(kill bool) {
	if m.ending() {
		return
	}
	m.moveEnd(jobEnding)
	for _, j := range m.sortedJobs() {
		j.coll.End()
	}
	m.role.waitOver()
	m.passTeardown(kill)
	if kill {
		m.emit(SignalRanks{SIGTERM, AllJobs})
		m.emit(SetTimer{Timer{Kind: GraceTimer}, m.job.KillGraceMS})
	} else {
		m.emit(SignalRanks{SIGKILL, AllJobs}) // what the ranks left behind
	}
	if m.root != nil {
		m.emit(SetTimer{Timer{Kind: DrainTimer}, m.job.Timeouts.DrainWaitMS()})
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
// hold ranks: then their guard kills it (see ranks/guard), and a kill of
// its session's process group would take the guard before it acts.
func (m *Machine) stopDaemon(c *child) {
	hung := c.call == callSilent || !c.calledBack()
	m.emit(StopDaemon{ID: c.id, Kill: hung && !m.mayHoldRanks(c.id)})
}

// awaitGuards keeps child c, which stopped answering, from counting as
// gone until its ranks' guard must have killed it, if it may hold ranks:
// its session's end here says nothing of the node, and the job is not
// over while its ranks run.
func (m *Machine) awaitGuards(c *child) {
	if m.mayHoldRanks(c.id) {
		c.guardsDue = true
		m.emit(SetTimer{Timer{Kind: GuardsTimer, ID: c.id}, m.job.Timeouts.GuardsWaitMS()})
	}
}

// guardsActed: child id's guards must have killed it by now.
func (m *Machine) guardsActed(id int) {
	if c, ok := m.children[id]; ok {
		c.guardsDue = false // the step's settle pass looks at the end again
	}
}

// mayHoldRanks says whether daemon id may have started ranks: a Launch
// here places some on it, or no Launch came here and one may have reached
// it around this daemon (from mpirun, the source, or another routing
// parent). A daemon that never called back got no job, so no Launch.
func (m *Machine) mayHoldRanks(id int) bool {
	if c, ok := m.children[id]; ok && !c.calledBack() {
		return false
	}
	awaited := len(m.jobs) == 0 // a DVM between jobs: the next may be on its way
	for _, j := range m.jobs {
		if j.launch != launchAwaited && slices.Contains(j.app.RankNode, id) {
			return true
		}
		awaited = awaited || j.launch == launchAwaited
	}
	return awaited && m.root == nil && !slices.Contains(m.routing.Fanout(m.self), id)
}

// maybeFinish exits once the job is over here: ranks reaped, their output
// and the children's output passed on, children gone.
func (m *Machine) maybeFinish() {
	if m.end != jobEnding {
		return
	}
	for _, j := range m.jobs {
		for _, r := range j.ranks {
			if !r.reaped || !r.drained {
				return
			}
		}
	}
	for _, c := range m.children {
		if !c.drained() {
			return
		}
	}
	m.exit(Exit{Status: m.role.exitStatus()})
}

// graceOver kills what is left of the ranks once the kill grace ran out
// (job's, for a DVM job's JobKill; 0: the teardown's); an orted whose
// lifeline ended in it goes with them.
func (m *Machine) graceOver(job int) {
	if job != 0 {
		if _, ok := m.jobs[job]; ok {
			m.emit(SignalRanks{SIGKILL, job})
		}
		return
	}
	m.termGrace = false
	m.emit(SignalRanks{SIGKILL, AllJobs})
	if m.orphanedInGrace && m.end != jobFinished {
		m.exit(Exit{Status: OrphanStatus})
	}
}

// OrphanStatus is the exit status of an orted that exits because its
// lifeline ended: its parent, seeing it, knows the link broke, not the
// orted.
const OrphanStatus = 1

func (m *Machine) exit(e Exit) {
	m.moveEnd(jobFinished)
	m.emit(e)
}

// lifelineLost ends an orted whose parent is gone: nothing may outlive it.
// An orted that got SIGTERM itself lets its ranks keep the rest of their
// kill grace (a bound of its own) to write their last words: at Slurm's
// time limit srun and mpirun get the TERM too, and may be gone before the
// ranks. Any other teardown is cut short: mpirun gone (a second Ctrl-C)
// means now.
func (m *Machine) lifelineLost(why string) {
	if m.termGrace {
		m.warn("%s; the ranks keep the rest of the kill grace", why)
		m.orphanedInGrace = true
		return
	}
	m.warn("exiting: %s", why)
	m.emit(SignalRanks{SIGKILL, AllJobs})
	if m.end == jobRunning {
		m.moveEnd(jobEnding)
	}
	m.exit(Exit{Status: OrphanStatus})
}
