package protocol

// PMIx direct modex: a rank wants what a rank of another daemon put and
// no fence brought here (Open MPI's asynchronous modex, or a fence that
// did not collect data). The request travels to the owner's daemon along
// the routing topology; its PMIx server answers once the owner has
// committed the data, and the answer travels back the same way. Nothing
// is cached here: the requesting server keeps what it got.

func (m *Machine) directModexWanted(e DirectModexWanted) {
	if e.Rank < 0 || e.Rank >= len(m.app.RankNode) {
		m.emit(ModexAnswered{ID: e.ID, Err: "no such rank"})
		return
	}
	m.modexRequest(ModexRequest{ID: e.ID, From: m.self, To: m.app.RankNode[e.Rank], Rank: e.Rank})
}

// replayEarlyModex serves the requests that came before the launch.
func (m *Machine) replayEarlyModex() {
	early := m.earlyModex
	m.earlyModex = nil
	for _, r := range early {
		m.modexRequest(r)
	}
}

// modexRequest serves a request for one of this daemon's ranks, or
// passes it on toward the rank's daemon.
func (m *Machine) modexRequest(r ModexRequest) {
	switch {
	case r.To != m.self:
		m.deliver(m.router.Route(r.To, r))
		return
	case m.launch != ranksStarted: // the requester's launch came first
		m.earlyModex = append(m.earlyModex, r)
		return
	}
	if _, ok := m.ranks[r.Rank]; !ok {
		m.modexReply(ModexReply{ID: r.ID, To: r.From, Err: "no such rank here"})
		return
	}
	m.emit(ServeModex{ID: r.ID, From: r.From, Rank: r.Rank})
}

// modexReply hands an answer to the driver, or passes it on toward the
// daemon that asked.
func (m *Machine) modexReply(r ModexReply) {
	if r.To != m.self {
		m.deliver(m.router.Route(r.To, r))
		return
	}
	m.emit(ModexAnswered{ID: r.ID, Data: r.Data, Err: r.Err})
}
