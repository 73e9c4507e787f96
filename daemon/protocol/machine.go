// Package protocol is the daemon's protocol as one deterministic machine:
// what mpirun (daemon 0) and every orted do, with no I/O inside. Typed
// events come in (a message on a link, a link up or down, a spawn's
// result, a timer, a rank's end, a signal), actions go out (send, dial,
// spawn, start or signal ranks, set a timer, print, exit). Time enters
// only as timer events; there are no goroutines, sockets, clocks or
// random numbers here.
//
// It composes phase 1 (spawn.Phase1), phase 2 (routed.Flood), the
// router, the phase-3 launch broadcast and the PMI collectives
// (modex/collective), and owns the milestones, the
// signal acknowledgements, the failure policy and the teardown. The
// daemon package drives it with sockets, processes and clocks; a
// simulator drives the very same machine on a virtual clock.
package protocol

import (
	"fmt"
	"slices"

	"prsh/errmgr"
	"prsh/routed"
	"prsh/spawn"
	"prsh/topo"
)

// Config starts a machine.
type Config struct {
	ID   int
	Node string // this daemon's node name
	Addr string // this daemon's contact address
	Job  JobSpec
	// Parent is the daemon that spawned this one (its spawn parent, or
	// the grandparent that adopted it), on ParentLink; -1 for mpirun.
	Parent     int
	ParentLink LinkID
	Nodes      []spawn.Node // the subtree this daemon spawns
	// Book holds the addresses phase 2 learns; nil means a table of this
	// daemon's own. A simulator shares one among its daemons (see
	// routed.NewSharedBook).
	Book *routed.Book

	// mpirun only.
	App       Launch
	TimeoutMS int64 // --timeout; 0 = never
	// Remap places the ranks again without the skipped daemons (by id),
	// for --on-unreachable skip; it returns the daemon of each rank.
	Remap func(skipped map[int]bool) ([]int, error)
}

// Machine is one daemon's protocol state.
type Machine struct {
	cfg       Config
	self      int
	job       JobSpec
	spawnTree topo.Tree
	routing   routed.Topology
	phase1    *spawn.Phase1
	flood     *routed.Flood
	router    *routed.Router[Message]

	links    map[int]LinkID // the link messages to a peer go on
	linkPeer map[LinkID]int // every open link's peer
	dialing  map[int][]Message
	children map[int]*child
	// lifeSigns counts the signs of life and callbacks of this daemon's
	// children: a callback timer that fires after some is set again.
	lifeSigns int

	// staged: this node's copy of the staged files is here (or none are
	// needed); it may come before the Launch or after it.
	staged bool
	// jobs are the jobs here (jobs.go): job 0 of a plain mpirun, or a
	// DVM's from their first message here to their JobEnd; released, the
	// DVM's jobs over here.
	jobs     map[int]*jobState
	released jobSet
	// lost are the daemons a DVM lost (dvmlost.go): nothing is routed
	// through them any more.
	lost map[int]bool
	// unreached are the routing neighbours a DVM's daemon failed to dial,
	// with the dial's error, while it waits for word of their loss.
	unreached map[int]string

	// milestones are the daemons' own (Spawned, Addressed); Started and
	// Exited are each job's.
	milestones [Addressed + 1]*reduction
	acks       map[int]*reduction // by Signal.Seq

	progressOver bool // the subtree is up: no more launch progress reports

	end endState
	// termGrace: this orted got SIGTERM (Slurm's time limit) and its
	// ranks' kill grace runs; orphanedInGrace: the lifeline ended
	// meanwhile, so the orted exits when the grace does (teardown.go).
	termGrace, orphanedInGrace bool

	role role       // what becomes of this subtree's reports
	root *rootState // mpirun's own state; nil on an orted

	out []Action
}

// child is a direct child in the spawn tree, from its spawn to its exit.
type child struct {
	id      int
	host    string
	session sessionState // the launch agent's process that runs its orted
	call    callState    // its call back and link
	link    LinkID
	armedAt int    // the parent's lifeSigns when its callback timer was set
	failed  bool   // given up on: nothing waits for it any more
	why     string // what failed, worded for the user
	// lostLink: its link ended while its session ran; the failure, so
	// worded, waits ExitWaitMS for the session's exit to name the cause.
	lostLink string
	outputs  int // output streams open
	// outputSeen: an output stream was opened and closed.
	outputSeen bool
	pending    *Pending // what it last said of its subtree's missing daemons
	size       int      // its spawn subtree's daemons, itself included; 0 until needed
	// guardsDue: it stopped answering while it may hold ranks, and its
	// ranks' guard may not have killed it yet (GuardsTimer).
	guardsDue bool
	// before are the jobs that ran before an added daemon (added.go)
	// came, whose Launch it gets when it calls back.
	before []int
}

// calledBack says the child's orted called back (its link may be gone
// since).
func (c *child) calledBack() bool {
	return c.call == callLinked || c.call == callLinkLost || c.call == callSilent
}

// linked says the child's link is up: messages can go to it.
func (c *child) linked() bool { return c.call == callLinked }

// running says the child's session process runs.
func (c *child) running() bool { return c.session == sessionRunning }

// drained says the child is gone and everything it sent has been passed on.
func (c *child) drained() bool {
	return c.session == sessionEnded && c.outputs == 0 && (c.outputSeen || !c.linked()) && !c.guardsDue
}

// rank is one local rank as the protocol sees it.
type rank struct {
	reaped, drained bool
	pmi, finalized  bool   // it used PMI; it finalised it
	pmiErr          string // what was wrong with its PMI input
	left            bool   // it will enter no collective of the job (ranksleft.go)
}

// New builds the machine of one daemon.
func New(cfg Config) (*Machine, error) {
	cfg.Job.Timeouts = cfg.Job.Timeouts.WithDefaults()
	job := cfg.Job
	radix := job.RoutedRadix
	if radix <= 0 {
		radix = job.SpawnDegree
	}
	if radix <= 0 {
		radix = routed.DefaultRadix
	}
	rt, err := routed.New(job.Routed, job.planned(), radix)
	if err != nil {
		return nil, err
	}
	rt = routed.Grow(rt, job.Daemons)
	m := &Machine{
		cfg: cfg, self: cfg.ID, job: job, routing: rt, spawnTree: rt.Tree(),
		links: map[int]LinkID{}, linkPeer: map[LinkID]int{}, dialing: map[int][]Message{},
		children: map[int]*child{}, jobs: map[int]*jobState{},
		acks: map[int]*reduction{}, lost: map[int]bool{}, unreached: map[int]string{},
	}
	if m.self == 0 {
		m.root = &rootState{m: m, skipped: map[int]bool{}, stops: map[int]bool{}, stopSeq: map[int]int{}, lostSaid: map[int]bool{},
			children: map[int]*childJob{}, ordinals: map[int]int{}, asked: map[placeKey]ChildJobRequest{}}
		m.role = m.root
	} else {
		m.role = &orted{m: m}
	}
	switch {
	case job.OneStep:
		// A star: mpirun spawns every node in one step. Phase 2 floods
		// over it too, so mpirun sends each of n orteds what it lacks:
		// O(n²) addresses in all, fine at hundreds of nodes, not at 10k.
		m.spawnTree = topo.Grown(topo.Radix(job.planned(), job.planned()-1), job.Daemons)
	case job.SpawnDegree > 0:
		m.spawnTree = topo.Grown(topo.Radix(job.planned(), job.SpawnDegree), job.Daemons)
	}
	m.phase1 = spawn.NewPhase1(m.self, m.spawnTree)
	if job.SkipUnreachable {
		m.phase1.AdoptOrphans()
	}
	book := cfg.Book
	if book == nil {
		book = routed.NewBook(job.Daemons)
	}
	if book.Size() != job.Daemons {
		return nil, fmt.Errorf("an address table for %d daemons in a job of %d", book.Size(), job.Daemons)
	}
	floodParent := cfg.Parent
	if m.added() { // it learns no address: mpirun is its only neighbour
		floodParent = -1
	}
	m.flood = routed.NewFlood(m.self, cfg.Addr, floodParent, m.spawnTree.Children(m.self), book)
	m.router = routed.NewRouter[Message](m.self, rt, m.reachable)
	for k := range m.milestones {
		m.milestones[k] = newReduction(m.spawnTree.Children(m.self))
	}
	if !job.DVM {
		m.jobs[0] = m.newJob(0, m.spawnTree.Children(m.self))
	}
	if cfg.Parent >= 0 {
		m.links[cfg.Parent] = cfg.ParentLink
		m.linkPeer[cfg.ParentLink] = cfg.Parent
	}
	return m, nil
}

// Start begins phases 1 and 2 (and, at mpirun, the launch, which overlaps
// them).
func (m *Machine) Start() []Action {
	if m.root != nil {
		m.root.start()
	}
	acts, err := m.phase1.Start(m.cfg.Nodes)
	if err != nil {
		m.fail(m.failure(errmgr.StatusFailed, "%v", err))
	} else {
		m.do(acts)
	}
	m.sendAddrs(m.flood.Start())
	m.checkAddressed()
	m.startProgress()
	m.checkSubtreeUp()
	m.staged = m.root != nil || len(m.job.Stage) == 0
	if m.root != nil && !m.job.launchesAfterSpawn() && !m.job.DVM {
		m.root.launch(m.cfg.App)
	}
	m.settle()
	return m.flush()
}

// Step takes one event and returns what to do about it.
func (m *Machine) Step(ev Event) []Action {
	if m.end == jobFinished {
		return nil
	}
	switch e := ev.(type) {
	case LinkUp:
		m.linkUp(e.Link, e.Peer)
	case LinkDown:
		m.linkDown(e)
	case Received:
		if peer, ok := m.linkPeer[e.Link]; ok {
			m.handle(e.Link, peer, e.Msg)
		}
	case DialFailed:
		m.dialFailed(e.Peer, e.Err)
	case SpawnStarted:
		m.spawnStarted(e.ID)
	case DaemonAlive:
		m.daemonAlive(e.ID)
	case SpawnFailed:
		m.spawnFailedToStart(e.ID, e.Err)
	case DaemonExited:
		m.daemonExited(e)
	case OutputOpened:
		m.outputOpened(e.Link)
	case OutputClosed:
		m.outputClosed(e.Link)
	case RankNotStarted:
		m.rankNotStarted(e)
	case RankExited:
		m.rankExited(e)
	case Staged:
		m.stagedHere(e.Err)
	case RankDrained:
		if _, r, ok := m.rankOf(e.Job, e.Rank); ok {
			r.drained = true
		}
	case TimerFired:
		m.timerFired(e.Timer)
	case DirectModexWanted:
		m.directModexWanted(e)
	case ModexServed:
		m.modexReply(ModexReply{ID: e.ID, To: e.From, Data: e.Data, Err: e.Err})
	case PMIFinalize, PMIConnected, PMIUnserved, PMIEnded, FenceEntered, AllgatherEntered, RingEntered, Aborted:
		m.pmiEvent(ev)
	case Interrupt:
		m.interrupted(e)
	case Orphaned:
		m.lifelineLost(e.Why)
	case CannotContinue:
		m.fail(m.failure(errmgr.StatusFailed, "%s", e.Err))
	case ChildJobWanted, ChildJobPlaced:
		m.childJobEvent(ev)
	case NamePublish, NameLookup, NameUnpublish:
		m.stepName(ev)
	case Submit, JobInterrupt, StopDVM, JobSignal:
		if m.root != nil && m.job.DVM {
			m.root.dvmEvent(ev)
		}
	default:
		m.warn("unknown event %T", ev)
	}
	m.settle()
	return m.flush()
}

// settle re-checks, once the event is handled, what it may have made
// ready: here, the end of the job. The other re-checks (milestones,
// collectives, phase 1) stay where they are: their actions go out in the
// middle of a step, before others, and the golden traces fix that order.
// So does the finish a teardown may bring (teardown calls maybeFinish):
// the teardown happens mid-step, and its Exit goes before what follows.
func (m *Machine) settle() { m.maybeFinish() }

func (m *Machine) emit(a Action) { m.out = append(m.out, a) }

func (m *Machine) flush() []Action {
	out := m.out
	m.out = nil
	return out
}

func (m *Machine) warn(format string, args ...any) {
	m.emit(Warn{fmt.Sprintf(format, args...)})
}

// Phase1Done says this daemon's direct children have all connected or
// been given up on.
func (m *Machine) Phase1Done() bool { return m.phase1.Done() }

// Known is the number of daemons whose address this daemon knows.
func (m *Machine) Known() int { return m.flood.Known() }

// Lookup is phase 2's view of a daemon's address.
func (m *Machine) Lookup(id int) (string, bool) { return m.flood.Lookup(id) }

// Ending says the job (a DVM: the DVM) is ending: nothing new starts.
func (m *Machine) Ending() bool { return m.ending() }

// Launched says a launch message reached this daemon and its ranks
// started.
func (m *Machine) Launched() bool {
	for _, j := range m.jobs {
		if j.launch == ranksStarted {
			return true
		}
	}
	return false
}

// Held is the number of messages waiting for an address or a link.
func (m *Machine) Held() int { return m.router.Held() }

func (m *Machine) hostOf(id int) string {
	if id >= 0 && id < len(m.job.Hosts) {
		return m.job.Hosts[id]
	}
	return fmt.Sprintf("daemon %d", id)
}

// failure words a failure at this daemon's node.
func (m *Machine) failure(status int, format string, args ...any) Failure {
	return failureAt(m.cfg.Node, status, format, args...)
}

func failureAt(node string, status int, format string, args ...any) Failure {
	return Failure{Msg: node + ": " + fmt.Sprintf(format, args...), Status: status}
}

func (m *Machine) sendTo(peer int, msg Message) {
	if l, ok := m.links[peer]; ok {
		m.emit(Send{l, msg})
	}
}

func (m *Machine) sendUp(msg Message) { m.sendTo(m.cfg.Parent, msg) }

// sortedChildren lists the children in id order, so that the actions of
// a step do not depend on map order.
func (m *Machine) sortedChildren() []*child {
	ids := make([]int, 0, len(m.children))
	for id := range m.children {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*child, len(ids))
	for i, id := range ids {
		out[i] = m.children[id]
	}
	return out
}

// Spawned lists, in id order, the daemons this one spawned, adopted ones
// included.
func (m *Machine) Spawned() []int {
	ids := make([]int, 0, len(m.children))
	for _, c := range m.sortedChildren() {
		ids = append(ids, c.id)
	}
	return ids
}

// SpawnParent is id's parent in the spawn tree.
func (m *Machine) SpawnParent(id int) int { return m.spawnTree.Parent(id) }

// Job is what every daemon knows of the job.
func (m *Machine) Job() JobSpec { return m.job }
