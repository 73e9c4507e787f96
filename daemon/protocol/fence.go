package protocol

import (
	"maps"
	"slices"

	"prsh/modex"
	"prsh/topo"
)

// The PMI fence is one more reduction over the spawn tree. Each daemon
// waits until every local rank entered the fence and every child whose
// subtree holds ranks sent up its part (FenceUp), then sends the merged
// puts up in one message. mpirun sends everything that fence committed
// back down (FenceDown); each daemon keeps its own copy (a modex.View),
// so that every get after the fence is answered on the node.

// fence is one fence in progress at this daemon.
type fence struct {
	red *reduction
	kvs []modex.KV
}

// fenceChildren lists the children whose subtree holds ranks: the only
// ones that take part in fences. Known once the launch is.
func (m *Machine) fenceChildren() []int {
	if m.carriers != nil {
		return m.carriers
	}
	ranksOn := map[int]int{}
	for _, d := range m.app.RankNode {
		ranksOn[d]++
	}
	m.carriers = []int{}
	for _, c := range m.sortedChildren() {
		if c.failed {
			continue
		}
		for _, id := range append([]int{c.id}, topo.Subtree(m.spawnTree, c.id)...) {
			if ranksOn[id] > 0 {
				m.carriers = append(m.carriers, c.id)
				break
			}
		}
	}
	return m.carriers
}

func (m *Machine) fenceAt(seq int) *fence {
	f, ok := m.fences[seq]
	if !ok {
		f = &fence{red: newReduction(m.fenceChildren())}
		m.fences[seq] = f
	}
	return f
}

// fenceEntered: a local rank entered its next fence with what it put
// since the last one.
func (m *Machine) fenceEntered(rank int, puts []modex.KV) {
	r, ok := m.ranks[rank]
	if !ok || r.reaped {
		return
	}
	r.fences, r.pmi = r.fences+1, true
	f := m.fenceAt(r.fences)
	f.kvs = append(f.kvs, puts...)
	m.checkFence(r.fences)
}

// fenceUp: a child's subtree entered fence seq.
func (m *Machine) fenceUp(child int, msg FenceUp) {
	if !m.launched {
		m.early = append(m.early, earlyFence{child, msg})
		return
	}
	f := m.fenceAt(msg.Seq)
	if !f.red.takes(child) {
		return
	}
	f.red.add(child)
	f.kvs = append(f.kvs, msg.KVs...)
	m.checkFence(msg.Seq)
}

// earlyFence is a child's FenceUp that came before this daemon had the
// launch (the launch may reach a child first, along a routing topology
// other than the spawn tree).
type earlyFence struct {
	child int
	msg   FenceUp
}

func (m *Machine) replayEarlyFences() {
	early := m.early
	m.early = nil
	for _, e := range early {
		m.fenceUp(e.child, e.msg)
	}
}

func (m *Machine) checkFence(seq int) {
	f := m.fences[seq]
	if f == nil {
		return
	}
	f.red.local = m.localRanksDone(seq, func(r *rank) int { return r.fences })
	if !f.red.ready() {
		return
	}
	delete(m.fences, seq)
	if m.isRoot() {
		m.fenceDown(seq, f.kvs)
		return
	}
	m.sendUp(FenceUp{Seq: seq, KVs: f.kvs})
}

// localRanksDone says whether every local rank entered collective seq
// (entered counts those it entered), or is done with PMI: finalised, or
// gone (a rank that ends without finalising ends the job anyway).
func (m *Machine) localRanksDone(seq int, entered func(*rank) int) bool {
	for _, r := range m.ranks {
		if entered(r) < seq && !r.finalized && !r.reaped {
			return false
		}
	}
	return true
}

// checkFences looks at every open fence and ring again, after a local
// rank left or a child was dropped.
func (m *Machine) checkFences() {
	for _, seq := range slices.Sorted(maps.Keys(m.fences)) {
		m.checkFence(seq)
	}
	for _, seq := range slices.Sorted(maps.Keys(m.rings)) {
		m.checkRing(seq)
	}
}

// fenceDown completes fence seq here and below: the committed puts join
// this daemon's view, and go on to the children that take part.
func (m *Machine) fenceDown(seq int, kvs []modex.KV) {
	m.view = m.view.With(kvs)
	for _, id := range m.fenceChildren() {
		if c := m.children[id]; c.connected && !c.linkDown {
			m.emit(Send{c.link, FenceDown{Seq: seq, KVs: kvs}})
		}
	}
	m.emit(FenceDone{Seq: seq, View: m.view})
}

// dropFences stops every fence and ring from waiting for a child that failed.
func (m *Machine) dropFences(child int) {
	for _, f := range m.fences {
		f.red.drop(child)
	}
	for _, r := range m.rings {
		r.red.drop(child)
	}
	m.checkFences()
}
