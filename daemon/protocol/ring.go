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

func (m *Machine) ringEntered(e RingEntered) {
	if r, ok := m.ranks[e.Rank]; ok && !r.reaped {
		entry := RingEntry{Rank: e.Rank, Count: e.Count, Left: e.Left, Right: e.Right}
		m.checkRing(m.rings.local(m, r, []RingEntry{entry}))
	}
}

func (m *Machine) ringUp(child int, msg RingUp) {
	if m.rings.child(m, child, msg.Seq, msg.Entries) {
		m.checkRing(msg.Seq)
	}
}

func (m *Machine) checkRing(seq int) {
	entries, ok := m.rings.ready(m, seq)
	switch {
	case !ok:
	case m.isRoot():
		m.ringDown(seq, answerRing(entries))
	default:
		m.sendUp(RingUp{Seq: seq, Entries: entries})
	}
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
