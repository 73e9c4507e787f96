package protocol

import (
	"maps"
	"slices"

	"prsh/topo"
)

// gather is the upward half shared by the PMI collectives (fence,
// allgather, ring): a reduction over the spawn tree that also carries
// entries. A daemon's part of collective number seq is ready once every
// local rank entered it (or is done with PMI) and every child whose
// subtree holds ranks sent its part up; the daemon then sends the merged
// entries up in one message. What comes back down differs per collective.
type gather[E any] struct {
	open  map[int]*gathering[E] // by sequence number
	early []childPart[E]        // came before the launch
	// entered is the rank's count of collectives of this kind it entered.
	entered func(*rank) *int
}

type gathering[E any] struct {
	red     *reduction
	entries []E
}

// childPart is a child's part that came before this daemon had the
// launch (the launch may reach a child first, along a routing topology
// other than the spawn tree): it waits until the launch says which
// children take part.
type childPart[E any] struct {
	child, seq int
	entries    []E
}

func newGather[E any](entered func(*rank) *int) *gather[E] {
	return &gather[E]{open: map[int]*gathering[E]{}, entered: entered}
}

func (g *gather[E]) at(m *Machine, seq int) *gathering[E] {
	p, ok := g.open[seq]
	if !ok {
		p = &gathering[E]{red: newReduction(m.carriers())}
		g.open[seq] = p
	}
	return p
}

// local: rank r entered its next collective of this kind with entries;
// it returns the collective's number.
func (g *gather[E]) local(m *Machine, r *rank, entries []E) int {
	n := g.entered(r)
	*n++
	r.pmi = true
	p := g.at(m, *n)
	p.entries = append(p.entries, entries...)
	return *n
}

// child: a child's subtree sent its part of collective seq. It reports
// whether the part was taken now.
func (g *gather[E]) child(m *Machine, child, seq int, entries []E) bool {
	if !m.launched {
		g.early = append(g.early, childPart[E]{child, seq, entries})
		return false
	}
	p := g.at(m, seq)
	if !p.red.takes(child) {
		return false
	}
	p.red.add(child)
	p.entries = append(p.entries, entries...)
	return true
}

// ready returns, once, the merged entries of collective seq when every
// part is in.
func (g *gather[E]) ready(m *Machine, seq int) ([]E, bool) {
	p := g.open[seq]
	if p == nil || m.ending {
		return nil, false // an ending job completes no collective
	}
	p.red.local = m.localRanksDone(seq, g.entered)
	if !p.red.ready() {
		return nil, false
	}
	delete(g.open, seq)
	return p.entries, true
}

// replay takes the parts that came before the launch and returns the
// collectives they touched.
func (g *gather[E]) replay(m *Machine) []int {
	early := g.early
	g.early = nil
	var seqs []int
	for _, e := range early {
		if g.child(m, e.child, e.seq, e.entries) {
			seqs = append(seqs, e.seq)
		}
	}
	return seqs
}

// drop stops every open collective from waiting for a failed child.
func (g *gather[E]) drop(child int) {
	for _, p := range g.open {
		p.red.drop(child)
	}
}

func (g *gather[E]) seqs() []int { return slices.Sorted(maps.Keys(g.open)) }

// carriers lists the children whose subtree holds ranks: the only ones
// that take part in the PMI collectives. Known once the launch is.
func (m *Machine) carriers() []int {
	if m.carrying != nil {
		return m.carrying
	}
	ranksOn := map[int]int{}
	for _, d := range m.app.RankNode {
		ranksOn[d]++
	}
	m.carrying = []int{}
	for _, c := range m.sortedChildren() {
		if c.failed {
			continue
		}
		for _, id := range append([]int{c.id}, topo.Subtree(m.spawnTree, c.id)...) {
			if ranksOn[id] > 0 {
				m.carrying = append(m.carrying, c.id)
				break
			}
		}
	}
	return m.carrying
}

// localRanksDone says whether every local rank entered collective seq
// (entered counts those it entered) or finalised PMI. A rank that ended
// without finalising holds the collective for ever: the job is failing,
// and the ranks waiting in it must not go on as if it had taken part.
func (m *Machine) localRanksDone(seq int, entered func(*rank) *int) bool {
	for _, r := range m.ranks {
		if *entered(r) < seq && !r.finalized {
			return false
		}
	}
	return true
}

// checkCollectives looks at every open PMI collective again, after a
// local rank left or a child was dropped.
func (m *Machine) checkCollectives() {
	for _, seq := range m.fences.seqs() {
		m.checkFence(seq)
	}
	for _, seq := range m.allgathers.seqs() {
		m.checkAllgather(seq)
	}
	for _, seq := range m.rings.seqs() {
		m.checkRing(seq)
	}
}

// dropFromCollectives stops every PMI collective from waiting for a
// child that failed.
func (m *Machine) dropFromCollectives(child int) {
	m.fences.drop(child)
	m.allgathers.drop(child)
	m.rings.drop(child)
	m.checkCollectives()
}

// replayEarly takes the children's parts that came before the launch.
func (m *Machine) replayEarly() {
	for _, seq := range m.fences.replay(m) {
		m.checkFence(seq)
	}
	for _, seq := range m.allgathers.replay(m) {
		m.checkAllgather(seq)
	}
	for _, seq := range m.rings.replay(m) {
		m.checkRing(seq)
	}
	early := m.earlyModex
	m.earlyModex = nil
	for _, r := range early {
		m.modexRequest(r)
	}
}

// sendToCarriers sends msg to every connected child that takes part in
// the PMI collectives.
func (m *Machine) sendToCarriers(msg Message) {
	for _, id := range m.carriers() {
		if c := m.children[id]; c.connected && !c.linkDown {
			m.emit(Send{c.link, msg})
		}
	}
}
