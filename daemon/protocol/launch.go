package protocol

import (
	"slices"

	"prsh/errmgr"
)

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
	if app.Sparse {
		m.launchSparse(j)
	} else {
		for _, c := range m.routing.Fanout(m.self) {
			m.deliver(m.router.Neighbour(c, app))
		}
	}
	m.maybeStartRanks(j)
}

// launchSparse passes a sparse job's Launch down the spawn tree to the
// children whose subtree holds its ranks, the only ones its reductions
// wait for and its later messages go to (jobChildren).
func (m *Machine) launchSparse(j *jobState) {
	nodes := map[int]bool{}
	for _, d := range j.app.RankNode {
		nodes[d] = true
	}
	j.holders = m.childrenHolding(nodes)
	for _, r := range []*reduction{j.started, j.exited, j.left} {
		r.only(j.holders)
	}
	for _, c := range m.jobChildren(j) {
		m.emit(Send{c.link, j.app})
	}
}

// jobChildren lists the linked children that job j's messages go down
// to: for a sparse job whose Launch came, those whose subtree holds its
// ranks; else every one.
func (m *Machine) jobChildren(j *jobState) []*child {
	var out []*child
	for _, c := range m.sortedChildren() {
		if c.linked() && (j == nil || !j.app.Sparse || slices.Contains(j.holders, c.id)) {
			out = append(out, c)
		}
	}
	return out
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
