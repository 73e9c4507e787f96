package protocol

// PMIx direct modex: a rank wants what a rank of another daemon put and
// no fence brought here (Open MPI's asynchronous modex, or a fence that
// did not collect data). The request travels to the owner's daemon along
// the routing topology; its PMIx server answers once the owner has
// committed the data, and the answer travels back the same way. Nothing
// is cached here: the requesting server keeps what it got.

func (m *Machine) directModexWanted(e DirectModexWanted) {
	j, ok := m.jobs[e.Job]
	if !ok || e.Rank < 0 || e.Rank >= len(j.app.RankNode) {
		m.emit(ModexAnswered{ID: e.ID, Err: "no such rank"})
		return
	}
	m.modexRequest(ModexRequest{ID: e.ID, From: m.self, To: j.app.RankNode[e.Rank], Rank: e.Rank, Job: e.Job})
}

// replayEarlyModex serves job j's requests that came before its launch.
func (m *Machine) replayEarlyModex(j *jobState) {
	early := j.earlyModex
	j.earlyModex = nil
	for _, r := range early {
		m.modexRequest(r)
	}
}

// modexRequest serves a request for one of this daemon's ranks, or
// passes it on toward the rank's daemon.
func (m *Machine) modexRequest(r ModexRequest) {
	if r.To != m.self {
		m.deliver(m.router.Route(r.To, r))
		return
	}
	j := m.jobOf(r.Job)
	switch {
	case j == nil:
		m.modexReply(ModexReply{ID: r.ID, To: r.From, Err: "no such job here"})
		return
	case j.launch != ranksStarted: // the requester's launch came first
		j.earlyModex = append(j.earlyModex, r)
		return
	}
	if _, ok := j.ranks[r.Rank]; !ok {
		m.modexReply(ModexReply{ID: r.ID, To: r.From, Err: "no such rank here"})
		return
	}
	m.emit(ServeModex{ID: r.ID, From: r.From, Job: r.Job, Rank: r.Rank})
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
