package protocol

import (
	"maps"
	"slices"
)

// PMIX_Ring (Slurm's PMI-2 extension, seed 004) as a gather up the spawn
// tree and a scatter down it: each daemon sends up its subtree's entries
// (rank, count, left and right values) in one message; mpirun puts them
// in rank order, computes every rank's answer, and each daemon passes
// down to a child only the answers for the ranks below it. Each entry and
// each answer crosses each level once: O(p · depth) bytes in O(depth)
// steps, where an allgather would send every entry to every daemon.

// RingEntry is one rank's part of a ring: given (Count, Left, Right) on
// the way up; on the way down Count is its position (the sum of the
// counts before it), Left the Right of the rank before it and Right the
// Left of the rank after it, wrapping round.
type RingEntry struct {
	Rank  int
	Count int
	Left  string
	Right string
}

// ring is one ring in progress at this daemon.
type ring struct {
	red     *reduction
	entries []RingEntry
}

func (m *Machine) ringAt(seq int) *ring {
	r, ok := m.rings[seq]
	if !ok {
		r = &ring{red: newReduction(m.fenceChildren())}
		m.rings[seq] = r
	}
	return r
}

// ringEntered: a local rank entered its next ring.
func (m *Machine) ringEntered(e RingEntered) {
	rk, ok := m.ranks[e.Rank]
	if !ok || rk.reaped {
		return
	}
	rk.rings, rk.pmi = rk.rings+1, true
	r := m.ringAt(rk.rings)
	r.entries = append(r.entries, RingEntry{Rank: e.Rank, Count: e.Count, Left: e.Left, Right: e.Right})
	m.checkRing(rk.rings)
}

// ringUp: a child's subtree entered ring seq.
func (m *Machine) ringUp(child int, msg RingUp) {
	if !m.launched {
		m.earlyRings = append(m.earlyRings, earlyRing{child, msg})
		return
	}
	r := m.ringAt(msg.Seq)
	if !r.red.takes(child) {
		return
	}
	r.red.add(child)
	r.entries = append(r.entries, msg.Entries...)
	m.checkRing(msg.Seq)
}

type earlyRing struct {
	child int
	msg   RingUp
}

func (m *Machine) checkRing(seq int) {
	r := m.rings[seq]
	if r == nil {
		return
	}
	r.red.local = m.localRanksDone(seq, func(rk *rank) int { return rk.rings })
	if !r.red.ready() {
		return
	}
	delete(m.rings, seq)
	if m.isRoot() {
		m.ringDown(seq, answerRing(r.entries))
		return
	}
	m.sendUp(RingUp{Seq: seq, Entries: r.entries})
}

// answerRing computes every rank's answer from every rank's entry.
func answerRing(entries []RingEntry) []RingEntry {
	in := slices.Clone(entries)
	slices.SortFunc(in, func(a, b RingEntry) int { return a.Rank - b.Rank })
	out := make([]RingEntry, len(in))
	sum := 0
	for i, e := range in {
		prev, next := in[(i+len(in)-1)%len(in)], in[(i+1)%len(in)]
		out[i] = RingEntry{Rank: e.Rank, Count: sum, Left: prev.Right, Right: next.Left}
		sum += e.Count
	}
	return out
}

// ringDown hands the local ranks their answers and passes the others on,
// each to the child below which its rank lives.
func (m *Machine) ringDown(seq int, answers []RingEntry) {
	toChild := map[int][]RingEntry{}
	var mine []RingEntry
	for _, a := range answers {
		if a.Rank < 0 || a.Rank >= len(m.app.RankNode) {
			continue
		}
		d := m.app.RankNode[a.Rank]
		if d == m.self {
			mine = append(mine, a)
		} else if c := m.childToward(d); c >= 0 {
			toChild[c] = append(toChild[c], a)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(toChild)) {
		if c := m.children[id]; c.connected && !c.linkDown {
			m.emit(Send{c.link, RingDown{Seq: seq, Entries: toChild[id]}})
		}
	}
	m.emit(RingDone{Seq: seq, Answers: mine})
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

func (m *Machine) replayEarlyRings() {
	early := m.earlyRings
	m.earlyRings = nil
	for _, e := range early {
		m.ringUp(e.child, e.msg)
	}
}
