package protocol

import (
	"fmt"

	"prsh/topo"
)

// A daemon lost while a DVM is up (its orted exited or was killed, its
// link broke, it went silent): its spawn parent gives it up, and its
// children lose their lifeline and end on their own, so the whole
// subtree is lost. The jobs with ranks there fail with the usual line;
// the others go on; the DVM drops the subtree and says so to every later
// client (DVM.md, "Failure policy"). It ends only once no orted is left.

// DaemonsLost: the DVM lost IDs (a daemon and its subtree), Hosts their
// nodes; Line is what every later client is told.
type DaemonsLost struct {
	IDs   []int
	Hosts []string
	Line  string
}

func (DaemonsLost) action() {}

// dropLost gives up on child c's subtree for good: nothing is routed
// through it, and a session that still runs (a cut link, a silent orted)
// is ended.
func (m *Machine) dropLost(c *child) {
	m.markLost(c.id)
	if c.running() {
		m.stopDaemon(c)
	}
}

// markLost records daemon id and its spawn subtree as lost, and lists
// them, id first.
func (m *Machine) markLost(id int) []int {
	ids := append([]int{id}, topo.Subtree(m.spawnTree, id)...)
	for _, d := range ids {
		m.lost[d] = true
	}
	return ids
}

// daemonLost takes the loss of f.Lost's subtree at mpirun of a DVM that
// is up: the jobs with ranks there fail with f's line, the others go on.
// It says false when the DVM cannot go on (it was not up yet, it is
// ending, or no orted is left): f then ends it.
func (r *rootState) daemonLost(f Failure) bool {
	m := r.m
	if !m.job.DVM || !r.upSaid || m.ending() {
		return false
	}
	if r.lostSaid[f.Lost] {
		return true
	}
	r.lostSaid[f.Lost] = true
	ids := m.markLost(f.Lost)
	if len(m.lost) >= m.job.Daemons-1 {
		return false
	}
	hosts := make([]string, len(ids))
	for i, id := range ids {
		hosts[i] = m.hostOf(id)
	}
	line := "mpirun: warning: the DVM lost " + hosts[0]
	if len(ids) > 1 {
		line += fmt.Sprintf(" (and %d below it)", len(ids)-1)
	}
	m.emit(Print{Line: "mpirun: " + f.Msg})
	m.emit(Print{Line: line})
	m.emit(DaemonsLost{IDs: ids, Hosts: hosts, Line: line})
	for _, j := range m.sortedJobs() {
		if j.placesOn(m.lost) {
			r.jobFailed(Failure{Msg: f.Msg, Status: f.Status, Job: j.num})
		}
	}
	return true
}

// placesOn says whether the job has ranks on one of the daemons.
func (j *jobState) placesOn(daemons map[int]bool) bool {
	for _, d := range j.app.RankNode {
		if daemons[d] {
			return true
		}
	}
	return false
}
