package protocol

import (
	"prsh/errmgr"
	"prsh/internal/timeouts"
	"prsh/spawn"
)

// Phase 1 at this daemon: spawning its children (spawn.Phase1's actions),
// their session processes, their signs of life and call backs, the
// callback timer, and a child that never comes up (failed, or skipped
// with --on-unreachable skip) or whose orted exits.

// do carries out phase 1's actions. In one job step (JobSpec.OneStep)
// the children of one decision are spawned with one SpawnStep, emitted
// before the actions that follow them.
func (m *Machine) do(acts []spawn.Action) {
	var step []spawn.Node
	flush := func() {
		if len(step) > 0 {
			m.emit(SpawnStep{Nodes: step})
			step = nil
		}
	}
	defer flush()
	for _, a := range acts {
		if _, ok := a.(spawn.SpawnNode); !ok {
			flush()
		}
		switch a := a.(type) {
		case spawn.SpawnNode:
			if m.job.OneStep {
				m.addChild(a.Node.ID, a.Node.Host)
				step = append(step, a.Node)
				continue
			}
			m.spawnChild(a.Node.ID, a.Node.Host)
		case spawn.SendSubtree:
			m.sendTo(a.To, Welcome{Job: m.job, Nodes: a.Nodes, Parent: m.self})
		case spawn.Complete:
			m.reach(Spawned, nil)
		case spawn.Skip:
			m.skip(a.Node.ID)
		}
	}
}

func (m *Machine) spawnChild(id int, host string) {
	m.addChild(id, host)
	m.emit(Spawn{spawn.Node{ID: id, Host: host}})
}

// addChild counts a child being spawned in this daemon's state.
func (m *Machine) addChild(id int, host string) {
	m.children[id] = &child{id: id, host: host}
	m.eachReduction(func(r *reduction) { r.join(id) })
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

func (m *Machine) acceptChild(c *child, l LinkID) {
	if c.failed || m.ending() {
		m.emit(CloseLink{l})
		return
	}
	added := c.id >= m.job.planned() // added.go: no part in phase 1
	var acts []spawn.Action
	if !added {
		var err error
		if acts, err = m.phase1.Connected(c.id); err != nil {
			m.warn("unexpected call back from daemon %d: %v", c.id, err)
			m.emit(CloseLink{l})
			return
		}
	}
	m.emit(CancelTimer{Timer{CallbackTimer, c.id}})
	m.lifeSigns++
	m.moveCall(c, callLinked)
	c.link = l
	m.links[c.id], m.linkPeer[l] = l, c.id
	m.emit(ForwardInput{Child: c.id, Link: l})
	if added {
		m.welcomeAdded(c, l)
	} else {
		m.do(acts) // the Welcome goes first on the link
	}
	if len(m.job.Stage) > 0 {
		m.emit(StageTo{Child: c.id, Link: l})
	}
	// A launch held for this child goes now, not once its whole subtree
	// has reported its addresses.
	m.deliver(m.router.Learned(c.id))
	for _, j := range m.sortedJobs() {
		m.collectives(j, j.coll.Reprobe(c.id))
	}
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
	if !m.job.SkipUnreachable || c.id >= m.job.planned() { // a child job waits for an added one
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

func (m *Machine) daemonExited(e DaemonExited) {
	c, ok := m.children[e.ID]
	if !ok {
		return
	}
	m.endSession(c)
	m.emit(CancelTimer{Timer{CallbackTimer, e.ID}})
	if e.Cancelled && m.root != nil && !m.job.DVM {
		m.root.cancelled(failureAt(c.host, 128+SIGTERM, "%s", m.slurmTerminated()))
	}
	switch {
	case c.lostLink != "":
		// Its link ended first, before any other failure. An orted that
		// died says more by its exit (a signal, a panic on stderr); one
		// that left because it lost its own end of the link does not.
		m.emit(CancelTimer{Timer{ExitWaitTimer, e.ID}})
		if e.Orphaned {
			m.childLost(c, c.lostLink)
		} else {
			m.childLost(c, "orted exited unexpectedly: "+e.Err)
		}
	case m.ending() || c.failed:
	case !c.calledBack():
		m.spawnFailed(c, failureAt(c.host, errmgr.StatusFailed, "orted exited before calling back: %s", e.Err))
	default:
		m.childLost(c, "orted exited unexpectedly: "+e.Err)
	}
}

// endSession records that child c's session process ended (or never
// started); the driver may say so twice (SpawnFailed, DaemonExited).
func (m *Machine) endSession(c *child) {
	if c.session != sessionEnded {
		m.moveSession(c, sessionEnded)
	}
}
