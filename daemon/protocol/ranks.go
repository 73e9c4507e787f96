package protocol

import (
	"slices"

	"prsh/errmgr"
	"prsh/modex/collective"
)

// This daemon's ranks as the protocol sees them: started, failing to
// start, aborting (MPI_Abort) and exiting, and the job's Exited
// milestone once all have.

// startRanks starts this daemon's share of job j's ranks.
func (m *Machine) startRanks(j *jobState) {
	mine := localRanks(j.app, m.self)
	if j.killed {
		mine = nil // killed before its Launch came here
	}
	for _, r := range mine {
		j.ranks[r] = &rank{}
	}
	m.emit(StartRanks{App: j.app, Ranks: mine})
	m.reach(Started, j)
	m.checkExited(j)
	m.checkRanksLeft(j)
}

// localRanks lists the ranks app's map places on daemon self.
func localRanks(app Launch, self int) []int {
	nodes := app.RankNode
	if app.RanksByNode {
		first, _ := slices.BinarySearch(nodes, self)
		last, _ := slices.BinarySearch(nodes, self+1)
		var mine []int
		for r := first; r < last; r++ {
			mine = append(mine, r)
		}
		return mine
	}
	var mine []int
	for r, d := range nodes {
		if d == self {
			mine = append(mine, r)
		}
	}
	return mine
}

func (m *Machine) rankNotStarted(e RankNotStarted) {
	j, r, ok := m.rankOf(e.Job, e.Rank)
	if !ok {
		return
	}
	r.reaped, r.drained = true, true
	m.fail(m.jobFailure(j, e.Status, "rank %d: %s", e.Rank, e.Err))
	m.checkExited(j)
}

func (m *Machine) rankExited(e RankExited) {
	j, r, ok := m.rankOf(e.Job, e.Rank)
	if !ok || r.reaped {
		return
	}
	r.reaped = true
	m.leaveGroups(j, e.Rank)
	switch {
	case m.ending() || j.killed:
	case e.Status != 0:
		m.fail(m.jobFailure(j, e.Status, "rank %d %s", e.Rank, e.How))
	case r.pmiErr != "":
		m.fail(m.jobFailure(j, errmgr.StatusFailed, "rank %d broke the PMI protocol: %s", e.Rank, r.pmiErr))
	case r.pmi && !r.finalized:
		m.fail(m.jobFailure(j, errmgr.StatusFailed, "rank %d exited with status 0 without finalizing MPI (PMI)", e.Rank))
	default:
		m.leaveJob(j, e.Rank, r)
	}
	m.checkExited(j)
}

// pmiEvent takes what a local rank's PMI client did.
func (m *Machine) pmiEvent(ev Event) {
	switch e := ev.(type) {
	case PMIFinalize:
		if j, r, ok := m.rankOf(e.Job, e.Rank); ok {
			r.finalized = true
			m.leaveJob(j, e.Rank, r)
			m.leaveGroups(j, e.Rank)
		}
	case PMIConnected:
		if _, r, ok := m.rankOf(e.Job, e.Rank); ok {
			r.pmi = true
		}
	case PMIUnserved:
		if j, _, ok := m.rankOf(e.Job, e.Rank); ok {
			m.fail(m.jobFailure(j, errmgr.StatusFailed, "rank %d cannot start: %s", e.Rank, e.Why))
		}
	case PMIEnded:
		if _, r, ok := m.rankOf(e.Job, e.Rank); ok {
			r.pmi, r.pmiErr = r.pmi || e.Used, e.Err
		}
	case FenceEntered:
		if len(e.Across) > 0 {
			m.enterAcross(e)
		} else {
			m.enter(e.Job, e.Rank, fenceGroup(e), collective.Fence, fencePart(e.Puts))
		}
	case AllgatherEntered:
		m.enter(e.Job, e.Rank, jobGroup, collective.Allgather, allgatherPart(e.Rank, e.Value))
	case RingEntered:
		m.enter(e.Job, e.Rank, jobGroup, collective.Ring, ringPart(e))
	case Aborted:
		m.aborted(e)
	}
}

// aborted ends the job as a rank asked (MPI_Abort), with its status.
func (m *Machine) aborted(e Aborted) {
	j, _, ok := m.rankOf(e.Job, e.Rank)
	if !ok {
		return
	}
	line := m.jobFailure(j, e.Status, "rank %d called MPI_Abort with status %d", e.Rank, e.Status)
	if e.Msg != "" {
		line.Msg += ": " + e.Msg
	}
	m.fail(line)
}

// jobFailure words a failure of a rank of job j.
func (m *Machine) jobFailure(j *jobState, status int, format string, args ...any) Failure {
	f := m.failure(status, format, args...)
	f.Job = j.num
	return f
}

func (m *Machine) checkExited(j *jobState) {
	if j.launch != ranksStarted || j.exited.local {
		return
	}
	for _, r := range j.ranks {
		if !r.reaped {
			return
		}
	}
	m.reach(Exited, j)
}
