package protocol

// A rank that finalised PMI, or exited without failing the job, has left
// the job: it enters none of the job's collectives any more, and fails
// each it did not enter (modex/collective's Left). A daemon whose ranks
// are all elsewhere never opens a fence that its own ranks will not
// enter, so it would never send its part, and the ranks that did enter
// would wait for ever: instead, once every rank of the job in its
// subtree has left, it says so to its parent, once (RanksLeft), and the
// parent counts it as come, with its ranks gone, in the job's
// collectives it sent no part of (ChildLeft). It is one message per tree
// edge and job, off the path of any collective.

// leaveJob: local rank r of job j left.
func (m *Machine) leaveJob(j *jobState, num int, r *rank) {
	if r.left {
		return
	}
	r.left = true
	m.collectives(j, j.coll.Left(jobGroup, num))
	m.checkRanksLeft(j)
}

// childRanksLeft: every rank of job j below child left.
func (m *Machine) childRanksLeft(j *jobState, child int) {
	if !j.left.takes(child) {
		return
	}
	j.left.add(child)
	m.collectives(j, j.coll.ChildLeft(child))
	m.checkRanksLeft(j)
}

// checkRanksLeft tells the parent, once, that every rank of job j in
// this subtree left; mpirun has no one to tell.
func (m *Machine) checkRanksLeft(j *jobState) {
	if j.launch != ranksStarted || j.killed || m.ending() {
		return
	}
	for _, r := range j.ranks {
		if !r.left {
			return
		}
	}
	j.left.local = true
	if j.left.ready() && m.root == nil {
		m.sendUp(RanksLeft{Job: j.num})
	}
}
