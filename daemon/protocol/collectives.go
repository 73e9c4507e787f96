package protocol

import (
	"prsh/modex"
	"prsh/modex/collective"
	"prsh/topo"
)

// The PMI collectives (fence, allgather, PMIX_Ring) are modex/collective's
// machine; this file feeds it the ranks' entries and the children's
// messages (CollectiveUp, CollectiveDown) and carries out what it asks.
// Each daemon keeps its own copy of what the fences committed (a
// modex.View), so that every get after a fence is answered on the node:
// no get crosses the network.

// jobGroup is the collective group of every rank of the job.
const jobGroup = ""

// RingEntry is one rank's entry in a PMIX_Ring, given or answered.
type RingEntry = collective.RingEntry

// enter: local rank entered its next collective of op with part. A rank
// that took part in one uses PMI: it must finalise it before it exits.
func (m *Machine) enter(rank int, op collective.Op, part collective.Part) {
	if r, ok := m.ranks[rank]; ok && !r.reaped {
		r.pmi = true
		m.collectives(m.coll.Enter(jobGroup, op, rank, part))
	}
}

// joinCollectives: the local ranks started; the job's collectives can
// tell who takes part here.
func (m *Machine) joinCollectives() {
	m.collectives(m.coll.Join(jobGroup, m.jobMembers))
}

// jobMembers is who takes part in the job's collectives here: every local
// rank, and the live children whose subtree holds ranks.
func (m *Machine) jobMembers() collective.Members {
	ranksOn := map[int]int{}
	for _, d := range m.app.RankNode {
		ranksOn[d]++
	}
	mem := collective.Members{Ranks: m.localRanks(), Toward: m.towardRank}
	for _, c := range m.sortedChildren() {
		if c.failed {
			continue
		}
		for _, id := range append([]int{c.id}, topo.Subtree(m.spawnTree, c.id)...) {
			if ranksOn[id] > 0 {
				mem.Children = append(mem.Children, c.id)
				break
			}
		}
	}
	return mem
}

// towardRank says where rank lives from here: here, below a live child
// (collective.Members.Toward), or nowhere.
func (m *Machine) towardRank(rank int) int {
	if rank < 0 || rank >= len(m.app.RankNode) {
		return collective.Nowhere
	}
	d := m.app.RankNode[rank]
	if d == m.self {
		return collective.Here
	}
	if c := m.childToward(d); c >= 0 {
		return c
	}
	return collective.Nowhere
}

// childToward is the live child of this daemon below which daemon id
// lives, or -1: the first live child on the way from id up the spawn
// tree (an adopted grandchild stands for its failed parent).
func (m *Machine) childToward(id int) int {
	for p := id; p >= 0; p = m.spawnTree.Parent(p) {
		if c, ok := m.children[p]; ok && !c.failed {
			return p
		}
		if p == m.self {
			break
		}
	}
	return -1
}

// collectives carries out the collective machine's actions.
func (m *Machine) collectives(acts []collective.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case collective.SendUp:
			m.sendUp(CollectiveUp{ID: a.ID, Part: a.Part})
		case collective.SendDown:
			if c := m.children[a.Child]; c != nil && c.linked() {
				m.emit(Send{c.link, CollectiveDown{ID: a.ID, Part: a.Part}})
			}
		case collective.Done:
			m.collectiveDone(a.ID, a.Part)
		}
	}
}

// collectiveDone releases the local ranks from a completed collective.
func (m *Machine) collectiveDone(id collective.ID, result collective.Part) {
	switch id.Op {
	case collective.Fence:
		m.view = m.view.With(result.KVs)
		m.emit(FenceDone{Seq: id.Seq, View: m.view})
	case collective.Allgather:
		m.emit(AllgatherDone{Seq: id.Seq, Values: result.Ordered})
	case collective.Ring:
		m.emit(RingDone{Seq: id.Seq, Answers: result.Ring})
	}
}

func fencePart(puts []modex.KV) collective.Part { return collective.Part{KVs: puts} }

func allgatherPart(rank int, value string) collective.Part {
	return collective.Part{Values: []collective.RankValue{{Rank: rank, Value: value}}}
}

func ringPart(e RingEntered) collective.Part {
	return collective.Part{Ring: []RingEntry{{Rank: e.Rank, Count: e.Count, Left: e.Left, Right: e.Right}}}
}
