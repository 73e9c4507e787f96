package protocol

import "slices"

// Allgather (seed 001's PMI extension): each rank gives one value and
// gets every rank's value in rank order, with no key strings. The values
// gather up the spawn tree (GatherUp); mpirun puts them in rank order and
// sends the list down (GatherDown).

// GatherEntry is one rank's value in an allgather.
type GatherEntry struct {
	Rank  int
	Value string
}

func (m *Machine) allgatherEntered(rank int, value string) {
	if r, ok := m.ranks[rank]; ok && !r.reaped {
		m.checkAllgather(m.allgathers.local(m, r, []GatherEntry{{rank, value}}))
	}
}

func (m *Machine) gatherUp(child int, msg GatherUp) {
	if m.allgathers.child(m, child, msg.Seq, msg.Entries) {
		m.checkAllgather(msg.Seq)
	}
}

func (m *Machine) checkAllgather(seq int) {
	entries, ok := m.allgathers.ready(m, seq)
	switch {
	case !ok:
	case m.isRoot():
		m.gatherDown(seq, inRankOrder(entries))
	default:
		m.sendUp(GatherUp{Seq: seq, Entries: entries})
	}
}

func inRankOrder(entries []GatherEntry) []string {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b GatherEntry) int { return a.Rank - b.Rank })
	values := make([]string, len(sorted))
	for i, e := range sorted {
		values[i] = e.Value
	}
	return values
}

func (m *Machine) gatherDown(seq int, values []string) {
	m.sendToCarriers(GatherDown{Seq: seq, Values: values})
	m.emit(AllgatherDone{Seq: seq, Values: values})
}
