package protocol

// The milestones (Spawned, Addressed, Started, Exited): each is reached
// here, then reported up the spawn tree once every live child's subtree
// has reached it too; at mpirun it moves the job on.

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
