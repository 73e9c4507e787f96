package protocol

import (
	"slices"

	"prsh/routed"
)

// Phase 2 at this daemon: the flood of contact addresses (routed.Flood)
// and the messages held until the addresses they wait for are known.

func (m *Machine) gotAddrs(from int, entries routed.Entries) {
	sends, fresh, err := m.flood.Receive(from, entries)
	if err != nil {
		m.warn("phase 2: %v", err)
		return
	}
	m.afterFlood(sends, fresh)
}

// afterFlood sends what phase 2 asks for and releases the messages that
// were waiting for the addresses just learned.
func (m *Machine) afterFlood(sends []routed.Send, fresh routed.Entries) {
	m.sendAddrs(sends)
	if m.router.Held() > 0 {
		m.deliver(m.router.Learned(heldIn(m.router.Waiting(), fresh)...))
	}
	m.checkAddressed()
	m.checkSubtreeUp()
}

// heldIn lists the daemons of waiting that fresh brought, in the order
// fresh holds them: it looks up the few daemons messages wait for rather
// than walk every address learned.
func heldIn(waiting []int, fresh routed.Entries) []int {
	type found struct{ id, at int }
	var in []found
	for _, id := range waiting {
		if at, ok := fresh.IndexOf(id); ok {
			in = append(in, found{id, at})
		}
	}
	slices.SortFunc(in, func(a, b found) int { return a.at - b.at })
	ids := make([]int, len(in))
	for i, f := range in {
		ids[i] = f.id
	}
	return ids
}

func (m *Machine) sendAddrs(sends []routed.Send) {
	for _, s := range sends {
		m.sendTo(s.To, Addrs{Entries: s.Entries})
	}
}

func (m *Machine) checkAddressed() {
	if (m.flood.Complete() || m.added()) && !m.milestones[Addressed].local {
		m.reach(Addressed, nil)
	}
}
