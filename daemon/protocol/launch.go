package protocol

import "prsh/errmgr"

// Phase 3 at this daemon: the Launch passed on along the routing
// topology, and the local ranks started once it and the staged files are
// both here.

// receiveLaunch is phase 3: pass the launch on along the routing
// topology, then start the local ranks once this node's staged files
// are in.
func (m *Machine) receiveLaunch(app Launch) {
	j := m.acceptLaunch(app)
	if j == nil {
		return
	}
	m.moveLaunch(j, launchHeld)
	m.learnAdded(app.Added)
	j.app = app
	j.view = j.view.With(Preputs(app.Preput))
	for _, c := range m.routing.Fanout(m.self) {
		m.deliver(m.router.Neighbour(c, app))
	}
	m.maybeStartRanks(j)
}

// maybeStartRanks starts the local ranks once both the Launch and the
// staged files are here. Until then the daemon counts as not launched,
// so that the children's collectives wait as they do for the Launch.
func (m *Machine) maybeStartRanks(j *jobState) {
	if j.launch != launchHeld || !m.staged {
		return
	}
	m.moveLaunch(j, ranksStarted)
	m.startRanks(j)
	m.joinCollectives(j)
	m.replayEarlyModex(j)
}

// stagedHere: this node's copy of the staged files is complete, or
// could not be made, which ends the job.
func (m *Machine) stagedHere(err string) {
	if err != "" { // at mpirun: an original it could not read
		m.fail(m.failure(errmgr.StatusFailed, "%s", err))
		return
	}
	if m.staged {
		return
	}
	m.staged = true
	if !m.ending() { // a job that ends starts nothing more
		for _, j := range m.sortedJobs() {
			m.maybeStartRanks(j)
		}
	}
}
