package protocol

// The milestones: Spawned and Addressed are the daemons', Started and
// Exited each job's (j). Each is reached here, then reported up the
// spawn tree once every live child's subtree has reached it too; at
// mpirun it moves the job (or the DVM) on.

// reach: this daemon reached milestone kind (of job j, for Started and
// Exited; nil otherwise).
func (m *Machine) reach(kind int, j *jobState) {
	m.reductionOf(kind, j).local = true
	m.checkMilestone(kind, j)
}

func (m *Machine) checkMilestones() {
	m.checkMilestone(Spawned, nil)
	m.checkMilestone(Addressed, nil)
	for _, j := range m.sortedJobs() {
		m.checkMilestone(Started, j)
		m.checkMilestone(Exited, j)
		m.checkRanksLeft(j)
	}
}

// reductionOf is milestone kind's reduction: the daemons', or job j's.
func (m *Machine) reductionOf(kind int, j *jobState) *reduction {
	if kind == Started || kind == Exited {
		return j.reduction(kind)
	}
	return m.milestones[kind]
}

// checkMilestone reports a milestone up the spawn tree once this daemon
// and every live direct child have reached it; at mpirun it moves the job
// on.
func (m *Machine) checkMilestone(kind int, j *jobState) {
	if m.reductionOf(kind, j).ready() {
		num := 0
		if j != nil {
			num = j.num
		}
		m.role.milestone(kind, num)
	}
}

// childMilestone: a child's subtree reached a milestone.
func (m *Machine) childMilestone(peer int, msg Milestone) {
	var j *jobState
	switch msg.Kind {
	case Spawned, Addressed:
	case Started, Exited:
		if j = m.jobOf(msg.Job); j == nil {
			return // a job released here, or none
		}
	default:
		return
	}
	m.reductionOf(msg.Kind, j).add(peer)
	m.checkMilestone(msg.Kind, j)
}
