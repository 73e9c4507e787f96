package sim

import (
	"encoding/json"

	"prsh/daemon/protocol"
	"prsh/modex/collective"
)

// size estimates the bytes msg takes on the wire (its JSON and the frame
// header) without encoding it: the simulator charges a link's bandwidth
// for it, and encoding every message of a 100,000-node launch would cost
// more than the rest of the simulation.
func (s *Sim) size(msg protocol.Message) int {
	const frame, entry, node = 5, 40, 30
	switch m := msg.(type) {
	case protocol.Addrs:
		return frame + 14 + entry*m.Entries.Len()
	case protocol.Welcome:
		return frame + 400 + s.hostBytes + node*len(m.Nodes)
	case protocol.Launch:
		return frame + 200 + s.rankMapBytes(m.RankNode)
	case protocol.CollectiveUp:
		if m.ID.Op == collective.Fence {
			return frame + 20 + 60*len(m.Part.KVs)
		}
	case protocol.CollectiveDown:
		switch m.ID.Op {
		case collective.Fence:
			return frame + 20 + 60*len(m.Part.KVs)
		case collective.Allgather:
			return frame + 20 + 20*len(m.Part.Ordered)
		}
	}
	return frame + 60
}

// wireSize is the size of v on the wire, for the job's host list and a
// Launch's rank map: for a regular cluster and placement, a few ranges or
// runs (hostrange.List, protocol.RankMap).
func wireSize(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// rankMapSize is the wire size of the rank map whose first rank is at
// first and that has n ranks.
type rankMapSize struct {
	first    *int
	n, bytes int
}

// rankMapBytes is the size of m on the wire. Every Launch of a run shares
// one map, mpirun's or the one it remaps without the skipped daemons, so
// the last one's size is kept rather than encoding O(ranks) per message.
func (s *Sim) rankMapBytes(m protocol.RankMap) int {
	if len(m) == 0 {
		return wireSize(m)
	}
	if c := s.rankMap; c.first != &m[0] || c.n != len(m) {
		s.rankMap = rankMapSize{&m[0], len(m), wireSize(m)}
	}
	return s.rankMap.bytes
}
