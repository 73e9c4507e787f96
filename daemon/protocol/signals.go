package protocol

// Signals: one delivered to mpirun, passed down the spawn tree to every
// rank, and acknowledged up the tree when mpirun asks (Ctrl-Z).

// interrupted passes a signal delivered to mpirun on to its role; the
// driver of an orted delivers none.
func (m *Machine) interrupted(e Interrupt) {
	if m.root == nil {
		m.warn("unexpected %T at an orted", e)
		return
	}
	m.root.interrupt(e.Sig, e.Name)
}

// signal delivers a signal to every rank in this subtree: down the spawn
// tree, then to the local ranks' process groups. With Ack, the subtree
// answers once every daemon in it has delivered it.
func (m *Machine) signal(s Signal) {
	var sentTo []int
	for _, c := range m.sortedChildren() {
		if c.linked() {
			m.emit(Send{c.link, s})
			sentTo = append(sentTo, c.id)
		}
	}
	m.emit(SignalRanks{s.Sig})
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
