package sim

import (
	"encoding/json"

	"prsh/daemon/protocol"
	"prsh/job/hostrange"
)

// size estimates the bytes msg takes on the wire (its JSON and the frame
// header) without encoding it: the simulator charges a link's bandwidth
// for it, and encoding every message of a 100,000-node launch would cost
// more than the rest of the simulation.
func (s *Sim) size(msg protocol.Message) int {
	const frame, entry, node, rank = 5, 40, 30, 7
	switch m := msg.(type) {
	case protocol.Addrs:
		return frame + 14 + entry*m.Entries.Len()
	case protocol.Welcome:
		return frame + 400 + s.hostBytes + node*len(m.Nodes)
	case protocol.Launch:
		return frame + 200 + rank*len(m.RankNode)
	case protocol.FenceUp:
		return frame + 20 + 60*len(m.KVs)
	case protocol.FenceDown:
		return frame + 20 + 60*len(m.KVs)
	case protocol.GatherDown:
		return frame + 20 + 20*len(m.Values)
	}
	return frame + 60
}

// wireSize is the size of the job's host list on the wire: for regular
// names, a few ranges (hostrange.List). Every Welcome carries the same one,
// so it is encoded once.
func wireSize(hosts hostrange.List) int {
	b, _ := json.Marshal(hosts)
	return len(b)
}
