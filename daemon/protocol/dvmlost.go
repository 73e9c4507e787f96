package protocol

import (
	"fmt"
	"slices"

	"prsh/errmgr"
	"prsh/routed"
	"prsh/topo"
)

// A daemon lost while a DVM is up (its orted exited or was killed, its
// link broke, it went silent): its spawn parent gives it up, and its
// children lose their lifeline and end on their own, so the whole
// subtree is lost. The jobs with ranks there fail with the usual line;
// the others go on; the DVM drops the subtree and says so to every later
// client (DVM.md, "Failure policy"). It ends only once no orted is left.

// DaemonsLost: the DVM lost IDs (a daemon and its subtree), Hosts their
// nodes; Line is what every later client is told.
type DaemonsLost struct {
	IDs   []int
	Hosts []string
	Line  string
}

func (DaemonsLost) action() {}

// dropLost gives up on child c's subtree for good: nothing is routed
// through it, and a session that still runs (a cut link, a silent orted)
// is ended.
func (m *Machine) dropLost(c *child) {
	m.markLost(c.id)
	if c.running() {
		m.stopDaemon(c)
	}
}

// markLost records daemon id and its spawn subtree as lost, and lists
// them, id first.
func (m *Machine) markLost(id int) []int {
	ids := append([]int{id}, topo.Subtree(m.spawnTree, id)...)
	for _, d := range ids {
		m.lost[d] = true
	}
	return ids
}

// daemonLost takes the loss of f.Lost's subtree at mpirun of a DVM that
// is up: the jobs with ranks there fail with f's line, the others go on.
// It says false when the DVM cannot go on (it was not up yet, it is
// ending, or no orted is left): f then ends it.
func (r *rootState) daemonLost(f Failure) bool {
	m := r.m
	if !m.job.DVM || !r.upSaid || m.ending() {
		return false
	}
	if r.lostSaid[f.Lost] {
		return true
	}
	r.lostSaid[f.Lost] = true
	ids := slices.DeleteFunc(m.markLost(f.Lost), func(id int) bool { return r.skipped[id] })
	if len(m.lost) >= m.job.Daemons-1 {
		return false
	}
	hosts := make([]string, len(ids))
	for i, id := range ids {
		hosts[i] = m.hostOf(id)
	}
	line := "mpirun: warning: the DVM lost " + hosts[0]
	if len(ids) > 1 {
		line += fmt.Sprintf(" (and %d below it)", len(ids)-1)
	}
	m.emit(Print{Line: "mpirun: " + f.Msg})
	m.emit(Print{Line: line})
	m.emit(DaemonsLost{IDs: ids, Hosts: hosts, Line: line})
	m.tellLost(ids)
	for _, j := range m.sortedJobs() {
		if j.placesOn(m.lost) {
			r.jobFailed(Failure{Msg: f.Msg, Status: f.Status, Job: j.num})
		} else {
			m.relaunchAround(j, ids)
		}
	}
	return true
}

// relaunchAround sends job j's Launch again to the daemons the lost ids
// pass it on to in the routing tree, while j has not started everywhere:
// a Launch on its way through one of them when it died is lost with it,
// and those below it (when the routing tree is not the spawn tree) would
// wait for it for ever. A daemon that had it already takes no repeat.
func (m *Machine) relaunchAround(j *jobState, ids []int) {
	if j.launch == launchAwaited || j.started.done || j.app.Sparse { // a sparse job's Launch goes down the spawn tree
		return
	}
	tree := m.routing.Tree()
	for _, id := range ids {
		if p := tree.Parent(id); p < 0 || !m.lost[p] { // the top of a lost routing subtree
			m.routeAround(routed.Delivery[Message]{Via: id, Msg: j.app})
		}
	}
}

// dvmSkipped: --dvm-start --on-unreachable skip left daemon id out (its
// node could not be reached): the DVM comes up without it, and tells
// each client as it tells a loss, with the warning line; it cannot come
// up when no orted is left.
func (r *rootState) dvmSkipped(id int, line string) {
	m := r.m
	m.lost[id] = true
	m.emit(DaemonsLost{IDs: []int{id}, Hosts: []string{m.hostOf(id)}, Line: line})
	if len(m.lost) >= m.job.Daemons-1 {
		r.fail(Failure{Msg: "no node of the DVM could be reached (--on-unreachable skip left them all out)", Status: errmgr.StatusFailed})
	}
}

// placesOn says whether the job has ranks on one of the daemons.
func (j *jobState) placesOn(daemons map[int]bool) bool {
	for _, d := range j.app.RankNode {
		if daemons[d] {
			return true
		}
	}
	return false
}

// Lost tells every daemon, down the spawn tree, which daemons the DVM
// lost: mpirun sends it once it took a loss, so that a daemon that
// routes through one of them (--routed binomial, direct, or a routing
// tree that is not the spawn tree) stops before it dials a dead peer.
type Lost struct{ IDs []int }

func (Lost) message() {}

// tellLost passes the loss of ids on to every linked child.
func (m *Machine) tellLost(ids []int) {
	for _, c := range m.sortedChildren() {
		if c.linked() && !m.lost[c.id] {
			m.emit(Send{c.link, Lost{IDs: ids}})
		}
	}
}

// lostAbove: the parent says the DVM lost ids. Passed on before acting;
// from then on nothing is routed through them, and what waited for a
// link to one of them goes around it.
func (m *Machine) lostAbove(ids []int) {
	if !m.job.DVM {
		return
	}
	m.tellLost(ids)
	for _, id := range ids {
		if id > 0 && id < m.job.Daemons && id != m.self {
			m.lost[id] = true
		}
	}
	for _, id := range ids {
		m.routeAroundHeld(id)
	}
}

// routeAroundHeld routes what waited for a link to the lost daemon id
// (a dial under way, or one that failed and waits for word of the loss)
// around it.
func (m *Machine) routeAroundHeld(id int) {
	queued, ok := m.dialing[id]
	if !ok || !m.lost[id] {
		return
	}
	delete(m.dialing, id)
	if _, ok := m.unreached[id]; ok {
		delete(m.unreached, id)
		m.emit(CancelTimer{Timer{LostWaitTimer, id}})
	}
	for _, msg := range queued {
		m.routeAround(routed.Delivery[Message]{Via: id, Msg: msg})
	}
}

// routeAround delivers what was routed through a daemon that is gone (a
// skipped daemon's address tombstone, or one the DVM lost): a message
// for one daemon goes straight to it, every address being known, and a
// direct-modex request for a daemon that is gone is answered with an
// error; a Launch goes to the daemons the gone one would have passed it
// on to.
func (m *Machine) routeAround(d routed.Delivery[Message]) {
	switch msg := d.Msg.(type) {
	case ModexRequest:
		if m.gone(msg.To) {
			m.modexReply(ModexReply{ID: msg.ID, To: msg.From, Err: "the DVM lost " + m.hostOf(msg.To)})
		} else {
			m.deliver(m.router.Neighbour(msg.To, msg))
		}
	case ModexReply:
		if !m.gone(msg.To) {
			m.deliver(m.router.Neighbour(msg.To, msg))
		}
	default:
		for _, next := range m.routing.Fanout(d.Via) {
			m.deliver(m.router.Neighbour(next, d.Msg))
		}
	}
}

// gone says daemon id cannot be sent to: the DVM lost it, or it was
// skipped (its address a tombstone).
func (m *Machine) gone(id int) bool {
	addr, known := m.flood.Lookup(id)
	return m.lost[id] || known && addr == ""
}

// awaitLoss: in a DVM, a failed dial to a routing neighbour may be a
// loss that has not reached this daemon yet: its spawn parent reports
// it, and mpirun's Lost comes down. What was routed to it waits until
// then, for its parent's silence bound and the wait for its exit at
// most; only then does the failed dial end the DVM (lostWaitOver).
func (m *Machine) awaitLoss(peer int, err string) bool {
	if !m.job.DVM || m.ending() {
		return false
	}
	m.unreached[peer] = err
	m.emit(SetTimer{Timer{LostWaitTimer, peer}, m.job.Timeouts.SilenceMS + ExitWaitMS})
	return true
}

// lostWaitOver: no word of the loss of peer, whose dial failed, came in
// time: the failed dial ends the DVM.
func (m *Machine) lostWaitOver(peer int) {
	err, ok := m.unreached[peer]
	if !ok {
		return
	}
	delete(m.unreached, peer)
	m.failDial(peer, err)
}
