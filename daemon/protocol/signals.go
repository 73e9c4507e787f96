package protocol

// Signals: one delivered to mpirun, passed down the spawn tree to every
// rank, and acknowledged up the tree when mpirun asks (Ctrl-Z).

// interrupted passes a signal delivered to mpirun on to its role; an
// orted's driver delivers only SIGTERM.
func (m *Machine) interrupted(e Interrupt) {
	switch {
	case m.root != nil:
		m.root.interrupt(e.Sig, e.Name)
	case e.Sig == SIGTERM:
		m.terminated()
	default:
		m.warn("unexpected SIG%s at an orted", e.Name)
	}
}

// terminated ends the job from an orted that got SIGTERM, as slurmstepd
// sends a step's tasks at the job's time limit or scancel, KillWait
// before its SIGKILL. mpirun, which may run outside any step (salloc),
// learns why in one line; this node's ranks get their SIGTERM at once,
// and only once, whether or not mpirun's teardown comes back in time.
func (m *Machine) terminated() {
	if m.ending() {
		return
	}
	m.fail(m.failure(128+SIGTERM, "%s", m.slurmTerminated()))
	m.teardown(true)
	m.termGrace = true
}

// slurmTerminated is the line of an orted that got SIGTERM, from Slurm
// where it runs in a job step.
func (m *Machine) slurmTerminated() string {
	if m.job.SrunJob == "" {
		return "orted got SIGTERM, terminating the job"
	}
	return "orted got SIGTERM from Slurm (job " + m.job.SrunJob + "'s time limit or scancel), terminating the job"
}

// signal delivers a signal to every rank in this subtree (of s.Job, in a
// DVM): down the spawn tree, then to the local ranks' process groups.
// With Ack, the subtree answers once every daemon in it has delivered it.
func (m *Machine) signal(s Signal) {
	var sentTo []int
	for _, c := range m.jobChildren(m.jobs[s.Job]) {
		m.emit(Send{c.link, s})
		sentTo = append(sentTo, c.id)
	}
	job := s.Job
	if job == 0 {
		job = AllJobs // mpirun's or the DVM's own signal: every job's ranks, child jobs' too
	}
	m.emit(SignalRanks{s.Sig, job})
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
