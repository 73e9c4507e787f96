package protocol

import (
	"slices"

	"prsh/errmgr"
	"prsh/internal/timeouts"
	"prsh/routed"
	"prsh/spawn"
)

// do carries out phase 1's actions.
func (m *Machine) do(acts []spawn.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case spawn.SpawnNode:
			m.spawnChild(a.Node.ID, a.Node.Host)
		case spawn.SendSubtree:
			m.sendTo(a.To, Welcome{Job: m.job, Nodes: a.Nodes, Parent: m.self})
		case spawn.Complete:
			m.reach(Spawned)
		case spawn.Skip:
			m.skip(a.Node.ID)
		}
	}
}

func (m *Machine) spawnChild(id int, host string) {
	m.children[id] = &child{id: id, host: host}
	for _, r := range m.milestones {
		r.join(id)
	}
	m.emit(Spawn{spawn.Node{ID: id, Host: host}})
}

func (m *Machine) spawnStarted(id int) {
	c, ok := m.children[id]
	if !ok || c.session != sessionSpawning {
		return
	}
	m.moveSession(c, sessionRunning)
	if m.ending() {
		m.emit(StopDaemon{ID: id})
		return
	}
	m.armCallback(c)
}

// armCallback gives child c the callback timeout to call back, from now.
func (m *Machine) armCallback(c *child) {
	c.armedAt = m.lifeSigns
	m.emit(SetTimer{Timer{CallbackTimer, c.id}, m.job.Timeouts.CallbackMS})
}

// daemonAlive counts a child's sign of life. The driver reports it once
// per child, and it may come after the call back: the two race there.
func (m *Machine) daemonAlive(id int) {
	c, ok := m.children[id]
	if !ok {
		return
	}
	m.lifeSigns++
	if c.call == callAwaited {
		m.moveCall(c, callAlive)
	}
}

// callbackExpired gives up on a child only when a whole callback timeout
// passed with no sign of life here: no child gave one or called back.
// Slow is not failed: on an overloaded machine the children call back
// late but keep coming, while a silent node stays silent.
func (m *Machine) callbackExpired(id int) {
	c, ok := m.children[id]
	if !ok || c.calledBack() || c.failed || c.session == sessionEnded {
		return
	}
	if m.lifeSigns != c.armedAt {
		m.armCallback(c)
		return
	}
	within := timeouts.Format(m.job.Timeouts.CallbackMS)
	f := failureAt(c.host, errmgr.StatusFailed, "orted started but did not call back within %s (it was told to call %s)", within, m.cfg.Addr)
	if c.call == callAwaited {
		f = failureAt(c.host, errmgr.StatusFailed, "orted gave no sign of life within %s of its session starting (it was told to call %s)", within, m.cfg.Addr)
	}
	m.spawnFailed(c, f)
	m.stopDaemon(c)
}

func (m *Machine) spawnFailedToStart(id int, err string) {
	c, ok := m.children[id]
	if !ok {
		return
	}
	m.endSession(c)
	m.spawnFailed(c, failureAt(c.host, errmgr.StatusFailed, "%s", err))
}

// spawnFailed handles a child that never came up: the job is aborted, or
// with --on-unreachable skip the child is left out and its children are
// adopted.
func (m *Machine) spawnFailed(c *child, f Failure) {
	if c.failed {
		return
	}
	c.failed, c.why = true, f.Msg
	m.dropChild(c.id)
	acts := m.phase1.Failed(c.id)
	if !m.job.SkipUnreachable {
		m.fail(f)
	}
	m.do(acts)
	m.checkMilestones()
}

// skip replaces a skipped child by its children in phase 2 and tells
// mpirun.
func (m *Machine) skip(id int) {
	m.role.report(Skipped{ID: id, Msg: m.children[id].why})
	sends, fresh, err := m.flood.Skip(id, m.spawnTree.Children(id))
	if err != nil {
		m.warn("phase 2: %v", err)
		return
	}
	m.afterFlood(sends, fresh)
}

func (m *Machine) daemonExited(id int, err string) {
	c, ok := m.children[id]
	if !ok {
		return
	}
	m.endSession(c)
	m.emit(CancelTimer{Timer{CallbackTimer, id}})
	if !m.ending() && !c.failed {
		if !c.calledBack() {
			m.spawnFailed(c, failureAt(c.host, errmgr.StatusFailed, "orted exited before calling back: %s", err))
		} else {
			c.failed = true
			m.dropChild(id)
			m.fail(failureAt(c.host, errmgr.StatusFailed, "orted exited unexpectedly: %s", err))
			m.checkMilestones()
		}
	}
}

// linkUp registers a link: a spawn child calling back, a daemon we
// dialled, or a routing neighbour that dialled us.
func (m *Machine) linkUp(l LinkID, peer int) {
	if c, ok := m.children[peer]; ok && !c.calledBack() {
		m.acceptChild(c, l)
		return
	}
	if peer < 0 || peer >= m.job.Daemons || peer == m.self {
		m.warn("dropping connection with a bad daemon id %d", peer)
		m.emit(CloseLink{l})
		return
	}
	m.linkPeer[l] = peer
	if _, ok := m.links[peer]; !ok {
		m.links[peer] = l
	}
	queued := m.dialing[peer]
	delete(m.dialing, peer)
	for _, msg := range queued {
		m.emit(Send{m.links[peer], msg})
	}
	m.deliver(m.router.Learned(peer))
}

func (m *Machine) acceptChild(c *child, l LinkID) {
	if c.failed || m.ending() {
		m.emit(CloseLink{l})
		return
	}
	acts, err := m.phase1.Connected(c.id)
	if err != nil {
		m.warn("unexpected call back from daemon %d: %v", c.id, err)
		m.emit(CloseLink{l})
		return
	}
	m.emit(CancelTimer{Timer{CallbackTimer, c.id}})
	m.lifeSigns++
	m.moveCall(c, callLinked)
	c.link = l
	m.links[c.id], m.linkPeer[l] = l, c.id
	m.emit(ForwardInput{Child: c.id, Link: l})
	m.do(acts) // the Welcome goes first on the link
	if len(m.job.Stage) > 0 {
		m.emit(StageTo{Child: c.id, Link: l})
	}
	// A launch held for this child goes now, not once its whole subtree
	// has reported its addresses.
	m.deliver(m.router.Learned(c.id))
}

// dialFailed ends the job: a daemon that cannot reach a routing
// neighbour cannot pass the launch on.
func (m *Machine) dialFailed(peer int, err string) {
	addr, _ := m.flood.Lookup(peer)
	delete(m.dialing, peer)
	m.fail(m.failure(errmgr.StatusFailed, "cannot reach the orted of %s at %s: %s", m.hostOf(peer), addr, err))
}

// linkDown handles a link that ended.
func (m *Machine) linkDown(e LinkDown) {
	l := e.Link
	peer, ok := m.linkPeer[l]
	if !ok {
		return
	}
	delete(m.linkPeer, l)
	if m.links[peer] == l {
		delete(m.links, peer)
	}
	if peer == m.cfg.Parent && l == m.cfg.ParentLink {
		m.lifelineLost(lostLink("parent", e))
		return
	}
	c, ok := m.children[peer]
	if !ok || c.link != l {
		return
	}
	if e.Silent {
		m.moveCall(c, callSilent)
	} else {
		m.moveCall(c, callLinkLost)
	}
	if m.ending() && e.Silent && c.running() {
		m.stopDaemon(c) // it stopped answering during the teardown
	}
	if !m.ending() && !c.failed {
		c.failed = true
		m.dropChild(c.id)
		m.fail(failureAt(c.host, errmgr.StatusFailed, "%s", lostLink("orted", e)))
		m.checkMilestones()
	}
}

// lostLink words the loss of the link to a peer ("orted", "parent"): a
// peer that stopped answering is not one that closed the link or died.
func lostLink(peer string, e LinkDown) string {
	if e.Silent {
		return peer + " stopped answering (" + e.Err + ")"
	}
	return "lost the link to its " + peer + ": " + e.Err
}

func (m *Machine) outputOpened(l LinkID) {
	if c := m.childOn(l); c != nil {
		c.outputs++
	}
}

func (m *Machine) outputClosed(l LinkID) {
	if c := m.childOn(l); c != nil && c.outputs > 0 {
		c.outputs--
		c.outputSeen = true
	}
}

// childOn is the connected child whose link l is, or nil.
func (m *Machine) childOn(l LinkID) *child {
	for _, c := range m.children {
		if c.calledBack() && c.link == l {
			return c
		}
	}
	return nil
}

// isChild says peer is a connected child.
func (m *Machine) isChild(peer int) bool {
	c, ok := m.children[peer]
	return ok && c.calledBack()
}

// handle dispatches a message from a neighbour.
func (m *Machine) handle(l LinkID, peer int, msg Message) {
	fromParent := peer == m.cfg.Parent && l == m.cfg.ParentLink
	switch msg := msg.(type) {
	case Addrs:
		m.gotAddrs(peer, msg.Entries)
	case Launch:
		m.receiveLaunch(msg)
	case Failure:
		if m.isChild(peer) {
			m.fail(msg)
		}
	case Milestone:
		if m.isChild(peer) && msg.Kind >= 0 && msg.Kind < NumMilestones {
			m.milestones[msg.Kind].add(peer)
			m.checkMilestone(msg.Kind)
		}
	case Teardown:
		if fromParent {
			m.teardown(msg.Kill)
		}
	case Signal:
		if fromParent {
			m.signal(msg)
		}
	case SignalAck:
		if m.isChild(peer) {
			m.acked(peer, msg.Seq)
		}
	case Skipped:
		if m.isChild(peer) {
			m.role.report(msg)
		}
	case CollectiveUp:
		if m.isChild(peer) {
			m.collectives(m.coll.FromChild(peer, msg.ID, msg.Part))
		}
	case CollectiveDown:
		if fromParent {
			m.collectives(m.coll.FromParent(msg.ID, msg.Part))
		}
	case ModexRequest:
		m.modexRequest(msg)
	case ModexReply:
		m.modexReply(msg)
	case Pending:
		m.pendingFrom(peer, msg)
	default:
		m.warn("unexpected message %T from daemon %d", msg, peer)
	}
}

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
	if m.flood.Complete() && !m.milestones[Addressed].local {
		m.reach(Addressed)
	}
}

// reachable says whether a message to id can go out now: a link exists or
// phase 2 told us its address.
func (m *Machine) reachable(id int) bool {
	if _, ok := m.links[id]; ok {
		return true
	}
	_, ok := m.flood.Lookup(id)
	return ok
}

// receiveLaunch is phase 3: pass the launch on along the routing
// topology, then start the local ranks once this node's staged files
// are in.
func (m *Machine) receiveLaunch(app Launch) {
	if m.launch != launchAwaited {
		return
	}
	m.moveLaunch(launchHeld)
	m.app = app
	for _, c := range m.routing.Fanout(m.self) {
		m.deliver(m.router.Neighbour(c, app))
	}
	m.maybeStartRanks()
}

// maybeStartRanks starts the local ranks once both the Launch and the
// staged files are here. Until then the daemon counts as not launched,
// so that the children's collectives wait as they do for the Launch.
func (m *Machine) maybeStartRanks() {
	if m.launch != launchHeld || !m.staged {
		return
	}
	m.moveLaunch(ranksStarted)
	m.startRanks()
	m.joinCollectives()
	m.replayEarlyModex()
}

// stagedHere: this node's copy of the staged files is complete, or
// could not be made, which ends the job.
func (m *Machine) stagedHere(err string) {
	if err != "" { // at mpirun: an original it could not read
		m.fail(m.failure(errmgr.StatusFailed, "%s", err))
		return
	}
	if m.staged {
		return
	}
	m.staged = true
	if !m.ending() { // a job that ends starts nothing more
		m.maybeStartRanks()
	}
}

// deliver sends what the router released. A broadcast for a skipped
// daemon (an address tombstone) goes to the daemons it would have passed
// it to; a daemon with an address but no link yet is dialled.
func (m *Machine) deliver(ds []routed.Delivery[Message]) {
	for _, d := range ds {
		if l, ok := m.links[d.Via]; ok {
			m.emit(Send{l, d.Msg})
		} else if addr, _ := m.flood.Lookup(d.Via); addr == "" {
			for _, next := range m.routing.Fanout(d.Via) {
				m.deliver(m.router.Neighbour(next, d.Msg))
			}
		} else {
			m.dial(d.Via, addr, d.Msg)
		}
	}
}

// dial connects to a routing neighbour that has no link yet; what was
// routed to it goes once the link is up.
func (m *Machine) dial(peer int, addr string, msg Message) {
	m.dialing[peer] = append(m.dialing[peer], msg)
	if len(m.dialing[peer]) == 1 {
		m.emit(Dial{Peer: peer, Addr: addr})
	}
}

// endSession records that child c's session process ended (or never
// started); the driver may say so twice (SpawnFailed, DaemonExited).
func (m *Machine) endSession(c *child) {
	if c.session != sessionEnded {
		m.moveSession(c, sessionEnded)
	}
}
