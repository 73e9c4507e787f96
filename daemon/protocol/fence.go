package protocol

import "prsh/modex"

// The PMI fence: a gather of the ranks' puts up the spawn tree (FenceUp,
// one message per subtree), then mpirun sends everything that fence
// committed back down (FenceDown). Each daemon keeps its own copy (a
// modex.View), so that every get after the fence is answered on the
// node: no get crosses the network.

func (m *Machine) fenceEntered(rank int, puts []modex.KV) {
	if r, ok := m.ranks[rank]; ok && !r.reaped {
		m.checkFence(m.fences.local(m, r, puts))
	}
}

func (m *Machine) fenceUp(child int, msg FenceUp) {
	if m.fences.child(m, child, msg.Seq, msg.KVs) {
		m.checkFence(msg.Seq)
	}
}

func (m *Machine) checkFence(seq int) {
	kvs, ok := m.fences.ready(m, seq)
	switch {
	case !ok:
	case m.isRoot():
		m.fenceDown(seq, kvs)
	default:
		m.sendUp(FenceUp{Seq: seq, KVs: kvs})
	}
}

// fenceDown completes fence seq here and below: the committed puts join
// this daemon's view, and go on down.
func (m *Machine) fenceDown(seq int, kvs []modex.KV) {
	m.view = m.view.With(kvs)
	m.sendToCarriers(FenceDown{Seq: seq, KVs: kvs})
	m.emit(FenceDone{Seq: seq, View: m.view})
}
