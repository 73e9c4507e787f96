package protocol

import (
	"prsh/errmgr"
	"prsh/routed"
)

// The links to the neighbours: one coming up (a child calling back, a
// routing neighbour), dialled, or lost; the output streams a child opens
// on its link; and the delivery of what the router releases onto them.

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

// dialFailed ends the job: a daemon that cannot reach a routing
// neighbour cannot pass the launch on. In a DVM, a neighbour lost is
// routed around instead (dvmlost.go).
func (m *Machine) dialFailed(peer int, err string) {
	if m.lost[peer] || m.awaitLoss(peer, err) {
		m.routeAroundHeld(peer)
		return
	}
	m.failDial(peer, err)
}

func (m *Machine) failDial(peer int, err string) {
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
		m.awaitGuards(c)
	} else {
		m.moveCall(c, callLinkLost)
	}
	if m.ending() && e.Silent && c.running() {
		m.stopDaemon(c) // it stopped answering during the teardown
	}
	if m.ending() || c.failed {
		return
	}
	if !e.Silent && c.running() {
		// An orted that died closed its link first: the exit status and
		// stderr its session reports an instant later (a signal, a Go
		// panic) say more than "EOF".
		c.lostLink = lostLink("orted", e)
		m.emit(SetTimer{Timer{ExitWaitTimer, c.id}, ExitWaitMS})
		return
	}
	m.childLost(c, lostLink("orted", e))
}

// ExitWaitMS is how long a child's failure waits, once its link ended,
// for its session's exit to say why.
const ExitWaitMS = 2000

// exitWaitOver: the session of a child whose link ended still runs (its
// orted lives on behind a cut link): the link's loss is the failure.
func (m *Machine) exitWaitOver(id int) {
	if c, ok := m.children[id]; ok && c.lostLink != "" {
		m.childLost(c, c.lostLink)
	}
}

// childLost gives up on child c: nothing waits for it any more, and the
// job fails with why.
func (m *Machine) childLost(c *child, why string) {
	c.lostLink = ""
	c.failed = true
	m.dropChild(c.id)
	f := failureAt(c.host, errmgr.StatusFailed, "%s", why)
	if m.job.DVM && !m.ending() {
		f.Lost = c.id
		m.dropLost(c)
	}
	m.fail(f)
	m.checkMilestones()
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

// reachable says whether a message to id can go out now: a link exists or
// phase 2 told us its address.
func (m *Machine) reachable(id int) bool {
	if _, ok := m.links[id]; ok || m.lost[id] { // deliver routes around the lost
		return true
	}
	_, ok := m.flood.Lookup(id)
	return ok
}

// deliver sends what the router released. What is routed through a
// skipped daemon (an address tombstone) or one a DVM lost goes around it
// (routeAround); a daemon with an address but no link yet is dialled.
func (m *Machine) deliver(ds []routed.Delivery[Message]) {
	for _, d := range ds {
		if l, ok := m.links[d.Via]; ok && !m.lost[d.Via] {
			m.emit(Send{l, d.Msg})
		} else if m.gone(d.Via) {
			m.routeAround(d)
		} else if _, waits := m.unreached[d.Via]; waits {
			m.dialing[d.Via] = append(m.dialing[d.Via], d.Msg) // until word of its loss
		} else {
			addr, _ := m.flood.Lookup(d.Via)
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
