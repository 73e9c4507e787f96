package protocol

import (
	"slices"

	"prsh/errmgr"
)

// This daemon's ranks as the protocol sees them: started, failing to
// start, aborting (MPI_Abort) and exiting, and the Exited milestone once
// all have.

// startRanks starts this daemon's share of the ranks.
func (m *Machine) startRanks() {
	mine := m.localRanks()
	if m.jobKilledHere() {
		mine = nil // killed before its Launch came here
	}
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
	m.fail(m.jobFailure(e.Status, "rank %d: %s", e.Rank, e.Err))
	m.checkExited()
}

func (m *Machine) rankExited(e RankExited) {
	r, ok := m.ranks[e.Rank]
	if !ok || r.reaped {
		return
	}
	r.reaped = true
	switch {
	case m.ending() || m.jobKilledHere():
	case e.Status != 0:
		m.fail(m.jobFailure(e.Status, "rank %d %s", e.Rank, e.How))
	case r.pmiErr != "":
		m.fail(m.jobFailure(errmgr.StatusFailed, "rank %d broke the PMI protocol: %s", e.Rank, r.pmiErr))
	case r.pmi && !r.finalized:
		m.fail(m.jobFailure(errmgr.StatusFailed, "rank %d exited with status 0 without finalizing MPI (PMI)", e.Rank))
	}
	m.checkExited()
}

// aborted ends the job as a rank asked (MPI_Abort), with its status.
func (m *Machine) aborted(e Aborted) {
	if _, ok := m.ranks[e.Rank]; !ok {
		return
	}
	line := m.jobFailure(e.Status, "rank %d called MPI_Abort with status %d", e.Rank, e.Status)
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
