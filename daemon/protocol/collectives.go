package protocol

import (
	"prsh/modex"
	"prsh/modex/collective"
)

// The PMI collectives (fence, allgather, PMIX_Ring) are modex/collective's
// machine; this file feeds it the ranks' entries and the children's
// messages (CollectiveUp, CollectiveDown, CollectiveProbe) and carries
// out what it asks.
// Each daemon keeps its own copy of what the fences committed (a
// modex.View), so that every get after a fence is answered on the node:
// no get crosses the network.

// jobGroup is the collective group of every rank of a job (each job has
// a collective machine of its own).
const jobGroup = ""

// RingEntry is one rank's entry in a PMIX_Ring, given or answered.
type RingEntry = collective.RingEntry

// enter: local rank of job entered its next collective of op over
// group with part. A rank that took part in one uses PMI: it must
// finalise it before it exits.
func (m *Machine) enter(job, rank int, group string, op collective.Op, part collective.Part) {
	j, r, ok := m.rankOf(job, rank)
	if !ok || r.reaped || (group != jobGroup && !m.joinGroup(j, group)) {
		return
	}
	r.pmi = true
	m.collectives(j, j.coll.Enter(group, op, rank, part))
}

// joinCollectives: job j's local ranks started; its collectives can tell
// who takes part here.
func (m *Machine) joinCollectives(j *jobState) {
	m.collectives(j, j.coll.Join(jobGroup, func() collective.Members { return m.jobMembers(j.app) }))
	m.joinEarlyGroups(j)
	m.joinWaitingAcross(j)
}

// jobMembers is who takes part in app's collectives here: every local
// rank, and the live children whose subtree holds ranks.
func (m *Machine) jobMembers(app Launch) collective.Members {
	all := make([]int, len(app.RankNode))
	for r := range all {
		all[r] = r
	}
	return m.groupMembers(app, all)
}

// towardRank says where rank lives from here: here, below a live child
// (collective.Members.Toward), or nowhere.
func (m *Machine) towardRank(app Launch, rank int) int {
	if rank < 0 || rank >= len(app.RankNode) {
		return collective.Nowhere
	}
	d := app.RankNode[rank]
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

// collectives carries out job j's collective machine's actions.
func (m *Machine) collectives(j *jobState, acts []collective.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case collective.SendUp:
			m.sendUp(CollectiveUp{ID: a.ID, Part: a.Part, Job: j.num})
		case collective.SendDown:
			if c := m.children[a.Child]; c != nil && c.linked() {
				m.emit(Send{c.link, CollectiveDown{ID: a.ID, Part: a.Part, Job: j.num}})
			}
		case collective.Probe:
			if c := m.children[a.Child]; c != nil && c.linked() {
				m.emit(Send{c.link, CollectiveProbe{ID: a.ID, Job: j.num}})
			}
		case collective.Done:
			m.collectiveDone(j, a.ID, a.Part)
		}
	}
}

// collectiveDone releases job j's local ranks from a completed
// collective.
func (m *Machine) collectiveDone(j *jobState, id collective.ID, result collective.Part) {
	switch id.Op {
	case collective.Fence:
		if id.Group != jobGroup { // a group's data is its fence's only
			m.emit(FenceDone{Job: j.num, Seq: id.Seq, Group: id.Group, Puts: result.KVs, Gone: result.Gone})
			return
		}
		j.view = j.view.With(result.KVs)
		m.emit(FenceDone{Job: j.num, Seq: id.Seq, View: j.view, Gone: result.Gone})
	case collective.Allgather:
		m.emit(AllgatherDone{Job: j.num, Seq: id.Seq, Values: result.Ordered, Gone: result.Gone})
	case collective.Ring:
		m.emit(RingDone{Job: j.num, Seq: id.Seq, Answers: result.Ring, Gone: result.Gone})
	}
}

func fencePart(puts []modex.KV) collective.Part { return collective.Part{KVs: puts} }

func allgatherPart(rank int, value string) collective.Part {
	return collective.Part{Values: []collective.RankValue{{Rank: rank, Value: value}}}
}

func ringPart(e RingEntered) collective.Part {
	return collective.Part{Ring: []RingEntry{{Rank: e.Rank, Count: e.Count, Left: e.Left, Right: e.Right}}}
}
