// Package sim runs the daemons' protocol machine for a whole cluster in
// one process, on a virtual clock: a discrete-event driver of the very
// machine that mpirun and every orted run. Spawns, callbacks, links,
// messages, timers and ranks are events on a queue ordered by virtual
// time (milliseconds); nothing here sleeps, reads a socket or starts a
// process. Tests use it for golden protocol traces and the paper's
// bounds; it is also the core of a simulator of large launches.
package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"prsh/daemon/protocol"
	"prsh/internal/timeouts"
	"prsh/routed"
	"prsh/spawn"
)

// Options describe a simulated cluster and its costs.
type Options struct {
	Job   protocol.JobSpec // Daemons and Hosts are filled in when zero
	Nodes int
	App   protocol.Launch
	// TimeoutMS is mpirun's --timeout.
	TimeoutMS int64
	Remap     func(skipped map[int]bool) ([]int, error)

	// TicksPerMS is the virtual clock's resolution: every time below is in
	// ticks, and the machine's timers (in ms) are scaled to them. 0 means
	// 1, a clock in milliseconds.
	TicksPerMS int64
	// Delay is the time a message takes from one daemon to another; nil
	// means 1 tick. Messages on one link stay in order whatever it returns.
	Delay func(from, to int) int64
	// BytesPerTick is a link's bandwidth: a message also takes its size
	// over it, and waits for the link to carry the ones before it. 0 means
	// no bound.
	BytesPerTick float64
	// SpawnMS is the time from a Spawn to its result (the ssh session);
	// StartMS the time from there to the new orted's callback.
	SpawnMS, StartMS int64
	// SpawnCost is the time a spawner spends on each session before the
	// next (forking ssh, its handshake's CPU): sessions start one after
	// another. MaxSessions bounds the sessions being opened at once at a
	// spawner (0 = no bound), as the ssh agent does.
	SpawnCost   int64
	MaxSessions int
	// Cores > 0 makes every process share that many cores, as on a
	// testbed that runs the whole cluster on one machine (0: each node has
	// its own CPU, and CPU work costs no more than its own time).
	// OrtedCPU is the CPU an orted's start takes before it can call back
	// (its session's processes, the orted's own start); RankCPU the CPU
	// a rank's start takes before it runs (its guard, its exec).
	// FairShare shares the cores equally among the work in progress (a
	// time-sharing kernel) instead of serving it first come first served.
	Cores             int
	FairShare         bool
	OrtedCPU, RankCPU int64
	// MpirunCPU is the CPU mpirun takes besides its machine's steps (its
	// start, its checks of the job, its exit), queued on the shared cores
	// at its start beside the spawns: it delays them only by taking a share.
	MpirunCPU int64
	// Idle is the share of a core each kind of process takes while it
	// waits (its timers, its pings, its runtime), on the shared cores: a
	// long launch of many processes spends much of its CPU so.
	Idle IdleCosts
	// ShareBook gives every daemon one address table (routed.NewSharedBook)
	// instead of one each: a large cluster's memory.
	ShareBook bool
	// RankMS is how long a rank runs before it exits with RankStatus[rank]
	// (0 by default); a negative RankMS runs the ranks until signalled.
	RankMS     int64
	RankStatus map[int]int
	// Fences is how many PMI fences each rank runs after it starts (each
	// with one put of its own), then Allgathers how many allgathers, and
	// with Ring one PMIX_Ring, before it finalises and runs RankMS.
	Fences, Allgathers int
	Ring               bool
	// Groups are fences over part of the job (PMIx_Fence with a list of
	// processes), each its ranks sorted: each rank first fences with each
	// group it is in, in this order; before it does, a rank in Leave
	// finalises and exits (it leaves every group).
	Groups [][]int
	Leave  map[int]bool
	// Faults by daemon id.
	Faults map[int]Fault
	// Trace receives one line per action and injected event; nil = none.
	Trace func(line string)
	// OnSend sees every message as it is sent.
	OnSend func(at int64, from, to int, msg protocol.Message)
}

// Fault is what goes wrong with one node.
type Fault struct {
	Refuse     string // the spawn fails with this error
	NoCallback bool   // the orted starts but never calls back
	Silent     bool   // the session starts, the orted never does (no sign of life)
	DieAt      int64  // the orted dies at this time (0 = never)
	// Signal is how a dead orted's end is reported to its spawner; ""
	// means "signal KILL".
	Signal     string
	CallbackMS int64 // the orted calls back this long after it started (0 = StartMS)
	// Cancelled: its session's end says Slurm cancelled its job step
	// (srun's slurmstepd line), whatever its status.
	Cancelled bool
}

// Sim is one simulated run.
type Sim struct {
	opt     Options
	now     int64
	seq     int64
	queue   events
	d       []*daemon
	nextEnd int
	Stderr  []string // what mpirun printed
	Status  int      // mpirun's exit status, once it exited
	ExitAt  int64    // when mpirun exited
	// RunningAtExit names the nodes whose orted still ran when mpirun
	// exited.
	RunningAtExit []string
	Done          bool     // mpirun exited
	Errors        []string // what the sim found wrong in the machine's actions
	Steps         int
	// Reached is when each milestone reached mpirun (-1: never).
	Reached [protocol.NumMilestones]int64
	// LastExit is when the last orted ended.
	LastExit int64
	// Messages and Bytes count what the daemons sent.
	Messages, Bytes int64
	// IdleCPU is the CPU each kind of process took while it waited, in
	// ticks.
	IdleCPU [NumKinds]int64

	book      *routed.Book
	hostBytes int         // the size of the job's host list, in every Welcome
	rankMap   rankMapSize // the size of the Launches' rank map
	// The shared cores, one of the two or neither (a CPU per node).
	fifo *fifoCPU
	fair *fairCPU
	jobs map[int]simJob // a DVM's submitted jobs, and the child jobs
	// childOrders are the scenario's child jobs, by request.
	childOrders map[int]ChildJobOrder
}

type endKey struct {
	daemon int
	link   protocol.LinkID
}

type end struct {
	daemon int
	link   protocol.LinkID
}

// linkEnd is one end of a link: a slice per daemon, not a map over the
// whole cluster, as every message looks it up.
type linkEnd struct {
	other   end
	open    bool
	lastArr int64 // the last arrival of a message sent from this end
}

// end is daemon id's end of link l, or nil.
func (s *Sim) end(id int, l protocol.LinkID) *linkEnd {
	d := s.d[id]
	if l < 1 || int(l) > len(d.links) {
		return nil
	}
	return &d.links[l-1]
}

type daemon struct {
	id       int
	m        *protocol.Machine
	created  bool // its process exists
	dead     bool // died or exited
	orphaned bool // exited with protocol.OrphanStatus
	hung     bool // stopped: takes no event
	lastLink protocol.LinkID
	links    []linkEnd // by LinkID-1
	parent   endKey    // the link to the spawn parent, once welcomed
	timers   map[protocol.Timer]int64
	ranks    map[rankID]*rankState // local ranks still running
	spawner  int                   // who spawned it
	upLink   endKey                // the parent's end of the callback link
	// The sessions it spawns: when the next may start, and when each
	// opening ends.
	spawnFree int64
	openings  []int64
}

// rankID names a rank: its job (0 in a plain mpirun) and its number.
type rankID struct{ job, rank int }

// sortedRanks lists ranks in job, then rank order.
func sortedRanks(ranks map[rankID]*rankState) []rankID {
	return slices.SortedFunc(maps.Keys(ranks), func(a, b rankID) int {
		return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.rank, b.rank))
	})
}

// simJob is how a DVM job's ranks behave: each exits with status[rank]
// (absent: 0) after ms (0: Options.RankMS).
type simJob struct {
	status map[int]int
	ms     int64
}

type rankState struct {
	fences, allgathers int    // collectives of each kind entered
	ringed             bool   // entered its ring
	groups             int    // the group fences of its own it entered
	inGroup            string // the group whose fence it is in
}

// New prepares a cluster of opt.Nodes nodes plus mpirun.
func New(opt Options) *Sim {
	if opt.Job.Daemons == 0 {
		opt.Job.Daemons = opt.Nodes + 1
	}
	if opt.Job.Hosts == nil {
		opt.Job.Hosts = Hosts(opt.Nodes)
	}
	if opt.Job.Routed == "" {
		opt.Job.Routed = "radix"
	}
	if opt.Delay == nil {
		opt.Delay = func(int, int) int64 { return 1 }
	}
	if opt.TicksPerMS <= 0 {
		opt.TicksPerMS = 1
	}
	s := &Sim{opt: opt, Status: -1}
	switch {
	case opt.Cores > 0 && opt.FairShare:
		s.fair = &fairCPU{cores: opt.Cores}
	case opt.Cores > 0:
		s.fifo = newFIFOCPU(opt.Cores)
	}
	for k := range s.Reached {
		s.Reached[k] = -1
	}
	s.hostBytes = wireSize(opt.Job.Hosts)
	if opt.ShareBook {
		s.book = routed.NewSharedBook(opt.Job.Daemons)
	}
	s.d = make([]*daemon, opt.Nodes+1)
	for id := range s.d {
		s.d[id] = &daemon{id: id, spawner: -1}
	}
	return s
}

// Hosts names n nodes node001… (index 0 is mpirun's host).
func Hosts(n int) []string {
	h := []string{"mpirun"}
	for i := 1; i <= n; i++ {
		h = append(h, fmt.Sprintf("node%03d", i))
	}
	return h
}

// Addr is the contact address of daemon id.
func Addr(id int) string { return fmt.Sprintf("tcp://10.0.%d.%d:4000", id>>8, id&255) }

// Machine is daemon id's machine (nil until it was welcomed).
func (s *Sim) Machine(id int) *protocol.Machine { return s.d[id].m }

// Now is the virtual time in milliseconds.
func (s *Sim) Now() int64 { return s.now }

// Start builds mpirun's machine and starts it.
func (s *Sim) Start() error {
	nodes := make([]spawn.Node, s.opt.Nodes)
	for i := range nodes {
		nodes[i] = spawn.Node{ID: i + 1, Host: s.opt.Job.Hosts[i+1]}
	}
	m, err := protocol.New(protocol.Config{
		ID: 0, Node: "mpirun", Addr: Addr(0), Job: s.opt.Job, Parent: -1, Nodes: nodes,
		App: s.opt.App, TimeoutMS: s.opt.TimeoutMS, Remap: s.opt.Remap, Book: s.book,
	})
	if err != nil {
		return err
	}
	d := s.d[0]
	d.m, d.created = m, true
	s.idle(d, KindMpirun)
	if s.opt.Cores > 0 {
		s.compute(s.opt.MpirunCPU, nil)
	}
	s.carry(d, m.Start())
	return nil
}

// At schedules f at virtual time t (a scenario's injected event).
func (s *Sim) At(t int64, f func()) { s.push(t, f) }

// Interrupt delivers signal sig (named name) to mpirun now.
func (s *Sim) Interrupt(sig int, name string) {
	s.tracef("d0 <- interrupt SIG%s", name)
	s.step(s.d[0], protocol.Interrupt{Sig: sig, Name: name})
}

// Submit hands mpirun of a DVM a client's job now; status gives the
// exit status of its ranks (by rank; absent: 0), ms how long they run
// (0: Options.RankMS), noPMIx whether its client found no PMIx in it,
// nodes the daemon of each rank (none: Options.App's).
func (s *Sim) Submit(job int, status map[int]int, ms int64, noPMIx bool, nodes ...int) {
	s.tracef("d0 <- submit job %d", job)
	if s.jobs == nil {
		s.jobs = map[int]simJob{}
	}
	s.jobs[job] = simJob{status: status, ms: ms}
	app := s.opt.App
	app.NoPMIx = noPMIx
	if len(nodes) > 0 {
		app.RankNode = nodes
	}
	s.step(s.d[0], protocol.Submit{Job: job, App: app})
}

// JobSignal passes signal sig, which job's client got, to the DVM now.
func (s *Sim) JobSignal(job, sig int, name string) {
	s.tracef("d0 <- job %d's client got SIG%s", job, name)
	s.step(s.d[0], protocol.JobSignal{Job: job, Sig: sig})
}

// StopDVM asks mpirun of a DVM to stop it now.
func (s *Sim) StopDVM() {
	s.tracef("d0 <- stop the DVM")
	s.step(s.d[0], protocol.StopDVM{})
}

// WantModex makes daemon id's PMIx server ask now for rank's data, as
// its request reqID (a direct modex).
func (s *Sim) WantModex(id, reqID, rank int) {
	s.tracef("d%d <- direct modex #%d for rank %d", id, reqID, rank)
	s.step(s.d[id], protocol.DirectModexWanted{ID: reqID, Rank: rank})
}

// Kill makes daemon id die now, as a SIGKILLed orted does.
func (s *Sim) Kill(id int) { s.kill(id, "") }

// kill makes daemon id die, reported to its spawner as how.
func (s *Sim) kill(id int, how string) {
	d := s.d[id]
	if d.dead || !d.created {
		return
	}
	if how == "" {
		how = "signal KILL"
	}
	s.tracef("d%d dies", id)
	s.die(d, how)
}

// silentReason is how the transport words a link that brought nothing
// for the silence bound (transport.SilentError).
func silentReason(silenceMS int64) string {
	return "nothing heard from it for " + timeouts.Format(silenceMS)
}

// Hang stops daemon id, as SIGSTOP would: it takes no more events, its
// peers see its links go down as silent after the silence bound, and
// its ranks' guard, if ranks run there, kills it after its bound.
func (s *Sim) Hang(id int) {
	d := s.d[id]
	if d.dead || d.hung || !d.created {
		return
	}
	s.tracef("d%d hangs", id)
	d.hung = true
	// The bounds of a hung daemon are the job's, as the driver has them:
	// its peers give up on a link that brought nothing for the silence
	// bound, its ranks' guard kills it once it has been stopped for that long.
	bounds := s.opt.Job.Timeouts.WithDefaults()
	s.At(s.now+bounds.SilenceMS, func() {
		for l := protocol.LinkID(1); l <= d.lastLink; l++ {
			s.closeEnd(d.id, l, protocol.LinkDown{Err: silentReason(bounds.SilenceMS), Silent: true})
		}
	})
	s.At(s.now+bounds.GuardStoppedMS, func() {
		if !d.dead && len(d.ranks) > 0 {
			s.tracef("d%d is killed by its ranks' guards", id)
			s.die(d, "signal KILL")
		}
	})
}

// stopDaemon ends child c's session: closing it ends a daemon that can
// act (it loses its lifeline); a hung one only dies of a kill, else its
// session ends for its parent and it stays.
func (s *Sim) stopDaemon(c *daemon, kill bool) {
	if !c.created || c.dead {
		return
	}
	if c.hung && !kill {
		s.push(s.now+1, func() {
			s.tracef("d%d stays stopped, its session closed", c.id)
			if c.upLink.daemon == c.spawner { // its output stream went with the link
				s.later(s.now+1, c.spawner, protocol.OutputClosed{Link: c.upLink.link})
			}
			s.later(s.now+1, c.spawner, protocol.DaemonExited{ID: c.id, Err: "session closed"})
		})
		return
	}
	how := "signal: hangup"
	if kill {
		how = "signal KILL"
	}
	s.push(s.now+1, func() { s.die(c, how) })
}

// Run processes events until the queue is empty or virtual time passes
// until (0 = no bound).
func (s *Sim) Run(until int64) error {
	for len(s.queue) > 0 {
		if until > 0 && s.queue[0].at > until {
			s.now = until
			return nil
		}
		s.next()
	}
	return nil
}

// RunBounded processes events until the queue is empty or maxEvents
// were processed (0 = no bound); it says whether it stopped early.
func (s *Sim) RunBounded(maxEvents int) bool {
	for len(s.queue) > 0 {
		if maxEvents > 0 && s.Steps >= maxEvents {
			return true
		}
		s.next()
	}
	return false
}

// next processes the earliest event.
func (s *Sim) next() {
	e := s.queue.pop()
	s.now = e.at
	s.Steps++
	if e.f != nil {
		e.f()
	} else {
		s.arrive(e.to, e.msg)
	}
}

func (s *Sim) push(at int64, f func()) {
	s.seq++
	s.queue.push(item{at: at, seq: s.seq, f: f})
}

func (s *Sim) tracef(format string, args ...any) {
	if s.opt.Trace != nil {
		s.opt.Trace(fmt.Sprintf("%6d ", s.now) + fmt.Sprintf(format, args...))
	}
}

// step feeds one event to a live daemon's machine.
func (s *Sim) step(d *daemon, ev protocol.Event) {
	if d.dead || d.hung || d.m == nil {
		return
	}
	s.carry(d, d.m.Step(ev))
}

// later feeds ev to daemon id at time t.
func (s *Sim) later(t int64, id int, ev protocol.Event) {
	s.push(t, func() { s.step(s.d[id], ev) })
}

// connect makes a link between a and b and returns a's end and b's end.
func (s *Sim) connect(a, b int) (protocol.LinkID, protocol.LinkID) {
	da, db := s.d[a], s.d[b]
	da.lastLink++
	db.lastLink++
	la, lb := da.lastLink, db.lastLink
	da.links = append(da.links, linkEnd{other: end{b, lb}, open: true})
	db.links = append(db.links, linkEnd{other: end{a, la}, open: true})
	return la, lb
}

// transmit carries msg over link l of daemon from, in order, after the
// link's delay.
func (s *Sim) transmit(from int, l protocol.LinkID, msg protocol.Message) {
	e := s.end(from, l)
	if e == nil || !e.open {
		return // closed
	}
	to := e.other
	if s.opt.OnSend != nil {
		s.opt.OnSend(s.now, from, to.daemon, msg)
	}
	size := s.size(msg)
	s.Messages++
	s.Bytes += int64(size)
	wire := int64(0)
	if s.opt.BytesPerTick > 0 {
		wire = int64(float64(size) / s.opt.BytesPerTick)
	}
	at := max(s.now+s.opt.Delay(from, to.daemon)+wire, e.lastArr+wire)
	e.lastArr = at
	s.seq++
	s.queue.push(item{at: at, seq: s.seq, to: to, msg: msg})
}

// arrive hands a message to its receiver; the first message on a new
// orted's callback link is its Welcome, which creates its machine.
func (s *Sim) arrive(to end, msg protocol.Message) {
	d := s.d[to.daemon]
	if d.dead {
		return
	}
	if e := s.end(to.daemon, to.link); e == nil || !e.open {
		return
	}
	if d.m == nil {
		w, ok := msg.(protocol.Welcome)
		if !ok {
			return
		}
		s.welcome(d, to.link, w)
		return
	}
	s.step(d, protocol.Received{Link: to.link, Msg: msg})
}

func (s *Sim) welcome(d *daemon, l protocol.LinkID, w protocol.Welcome) {
	book := s.book
	if book != nil && d.id >= book.Size() { // an added daemon: a book of its own
		book = nil
	}
	m, err := protocol.New(protocol.Config{
		ID: d.id, Node: w.Job.Hosts[d.id], Addr: Addr(d.id), Job: w.Job,
		Parent: w.Parent, ParentLink: l, Nodes: w.Nodes, Book: book,
	})
	if err != nil {
		s.tracef("d%d: %v", d.id, err)
		return
	}
	d.m, d.parent = m, endKey{d.id, l}
	s.carry(d, m.Start())
}

// closeEnd closes one end of a link: the other end sees it go down, as
// down says.
func (s *Sim) closeEnd(id int, l protocol.LinkID, down protocol.LinkDown) {
	e := s.end(id, l)
	if e == nil || !e.open {
		return
	}
	other := e.other
	e.open = false
	s.end(other.daemon, other.link).open = false
	at := max(s.now+s.opt.Delay(id, other.daemon), e.lastArr)
	down.Link = other.link
	s.later(at, other.daemon, down)
}

// die ends daemon d: its links close, its ranks die with it (their guard
// sees to that), its launch process ends, the children it spawned lose
// their lifeline.
func (s *Sim) die(d *daemon, how string) {
	d.dead = true
	d.ranks = nil
	// Link ids are handed out in order from 1: close its open ends in
	// order, without a walk over every link of the cluster.
	for l := protocol.LinkID(1); l <= d.lastLink; l++ {
		s.closeEnd(d.id, l, protocol.LinkDown{Err: "EOF"})
	}
	if d.id > 0 {
		s.LastExit = max(s.LastExit, s.now)
	}
	if p := d.spawner; p >= 0 {
		if d.upLink.daemon == p {
			s.later(s.now+1, p, protocol.OutputClosed{Link: d.upLink.link})
		}
		s.later(s.now+1, p, protocol.DaemonExited{ID: d.id, Err: how, Orphaned: d.orphaned, Cancelled: s.opt.Faults[d.id].Cancelled})
	}
	for _, id := range s.spawned(d) {
		if c := s.d[id]; c.spawner == d.id && c.created && !c.dead {
			s.orphan(c)
		}
	}
}

// orphan tells daemon c that its parent's session ended. One still
// calling back has no machine yet: it exits, as orted does.
func (s *Sim) orphan(c *daemon) {
	if c.m != nil {
		s.later(s.now+1, c.id, protocol.Orphaned{Why: "its parent's session ended"})
		return
	}
	s.push(s.now+1, func() {
		if !c.dead && !c.hung {
			s.tracef("d%d exits: its parent's session ended while it called back", c.id)
			s.die(c, "exit status 255")
		}
	})
}

// spawned lists, in id order, the daemons d's machine spawned (adopted
// ones included): a walk over the whole cluster at each daemon's end
// would be O(n²).
func (s *Sim) spawned(d *daemon) []int {
	if d.m == nil {
		return nil
	}
	return d.m.Spawned()
}

func (s *Sim) carry(d *daemon, acts []protocol.Action) {
	for _, a := range acts {
		s.trace(d, a)
		s.do(d, a)
	}
}

func (s *Sim) do(d *daemon, a protocol.Action) {
	switch a := a.(type) {
	case protocol.Send:
		s.transmit(d.id, a.Link, a.Msg)
	case protocol.Dial:
		s.dial(d, a.Peer)
	case protocol.CloseLink:
		s.closeEnd(d.id, a.Link, protocol.LinkDown{Err: "EOF"})
	case protocol.Spawn:
		s.spawn(d, a.Node.ID, false)
	case protocol.SpawnStep: // one session per node still: the cost model knows no steps
		for _, n := range a.Nodes {
			s.spawn(d, n.ID, true)
		}
	case protocol.StopDaemon:
		s.stopDaemon(s.d[a.ID], a.Kill)
	case protocol.StartRanks:
		s.startRanks(d, a.App.Job, a.Ranks)
	case protocol.FenceDone:
		s.fenceDone(d, a)
	case protocol.RingDone:
		s.ringDone(d, a)
	case protocol.AllgatherDone:
		s.allgatherDone(d, a)
	case protocol.PlaceChildJob:
		s.placeChildJob(d, a)
	case protocol.ServeModex: // the owner's PMIx server answers at once
		s.later(s.now+1, d.id, protocol.ModexServed{ID: a.ID, From: a.From, Data: []byte(fmt.Sprintf("r%d", a.Rank))})
	case protocol.SignalRanks:
		s.signalRanks(d, a.Sig, a.Job)
	case protocol.SetTimer:
		s.setTimer(d, a.Timer, a.MS)
	case protocol.CancelTimer:
		delete(d.timers, a.Timer)
	case protocol.Reached:
		s.Reached[a.Kind] = s.now
	case protocol.Print:
		if a.Job != 0 {
			s.Stderr = append(s.Stderr, fmt.Sprintf("(job %d) %s", a.Job, a.Line))
		} else {
			s.Stderr = append(s.Stderr, a.Line)
		}
	case protocol.Exit:
		s.exit(d, a.Status)
	case protocol.ForwardInput, protocol.StageTo, protocol.Warn, protocol.Waiting,
		protocol.ForwardStdin, protocol.StopSelf, protocol.ModexAnswered, protocol.ChildJobAnswered, protocol.NamesAnswered,
		protocol.DVMUp, protocol.JobDone, protocol.ReleaseJob, protocol.JobStopped, protocol.DaemonsLost:
		// No stdin, files, log, terminal or process here to act on.
	default:
		s.Errors = append(s.Errors, fmt.Sprintf("d%d: unknown action %T", d.id, a))
	}
}

// spawn starts daemon id's session; inStep, it is a task of one job step
// for many nodes, which starts even where the orted cannot: a refused
// node's task ends at once instead.
func (s *Sim) spawn(p *daemon, id int, inStep bool) {
	for len(s.d) <= id { // a daemon the job adds (a child job's add-host)
		s.d = append(s.d, &daemon{id: len(s.d), spawner: -1})
	}
	c, f := s.d[id], s.opt.Faults[id]
	exec := s.sessionOpen(p) + s.opt.SpawnMS
	s.idleWhile(KindAgent, func() bool { return s.now < exec }) // it waits its turn and the latency
	s.push(exec, func() {
		if p.dead {
			return
		}
		if f.Refuse != "" && inStep {
			s.step(p, protocol.SpawnStarted{ID: id})
			s.step(p, protocol.DaemonExited{ID: id, Err: f.Refuse})
			return
		}
		if f.Refuse != "" {
			s.step(p, protocol.SpawnFailed{ID: id, Err: f.Refuse})
			return
		}
		c.created, c.spawner = true, p.id
		s.idle(c, KindOrted)
		s.idle(c, KindShell)
		if f.DieAt > 0 {
			s.push(max(f.DieAt, s.now), func() { s.kill(id, f.Signal) })
		}
		s.step(p, protocol.SpawnStarted{ID: id})
		if f.Silent {
			return
		}
		s.later(s.now+1, p.id, protocol.DaemonAlive{ID: id})
		if !f.NoCallback {
			s.compute(s.opt.OrtedCPU, func() {
				s.push(s.now+cmp.Or(f.CallbackMS, s.opt.StartMS), func() { s.callBack(p, c) })
			})
		}
	})
}

// sessionOpen is when a session p starts now may begin to open: after the
// serial cost of the sessions before it, and once fewer than MaxSessions
// are opening.
func (s *Sim) sessionOpen(p *daemon) int64 {
	if s.opt.SpawnCost == 0 && s.opt.MaxSessions == 0 {
		return s.now
	}
	at := max(s.now, p.spawnFree) + s.opt.SpawnCost
	p.spawnFree = at
	if k := len(p.openings) - s.opt.MaxSessions; s.opt.MaxSessions > 0 && k >= 0 {
		at = max(at, p.openings[k])
	}
	p.openings = append(p.openings, at+s.opt.SpawnMS)
	return at
}

// callBack connects a new orted to its parent: its Hello (LinkUp at the
// parent) and its output stream.
func (s *Sim) callBack(p, c *daemon) {
	if c.dead || p.dead {
		return
	}
	lp, _ := s.connect(p.id, c.id)
	c.upLink = endKey{p.id, lp}
	s.step(p, protocol.LinkUp{Link: lp, Peer: c.id})
	s.step(p, protocol.OutputOpened{Link: lp})
}

func (s *Sim) dial(d *daemon, peer int) {
	at := s.now + s.opt.Delay(d.id, peer)
	s.push(at, func() {
		if d.dead {
			return
		}
		if pd := s.d[peer]; pd.dead || pd.m == nil {
			s.step(d, protocol.DialFailed{Peer: peer, Err: "connection refused"})
			return
		}
		la, lb := s.connect(d.id, peer)
		s.step(s.d[peer], protocol.LinkUp{Link: lb, Peer: d.id})
		s.step(d, protocol.LinkUp{Link: la, Peer: peer})
	})
}

func (s *Sim) startRanks(d *daemon, job int, ranks []int) {
	if d.ranks == nil {
		d.ranks = map[rankID]*rankState{}
	}
	for _, n := range ranks {
		r := rankID{job, n}
		rs := &rankState{}
		d.ranks[r] = rs
		runs := func() bool { return d.ranks[r] == rs }
		s.idleWhile(KindGuard, runs)
		s.idleWhile(KindRank, runs)
		s.compute(s.opt.RankCPU, func() {
			if s.usesPMI() {
				s.push(s.now+1, func() { s.nextCollective(d, r) })
				return
			}
			s.runRank(d, r)
		})
	}
}

// runRank lets a rank run for RankMS (its DVM job's time), then exit.
func (s *Sim) runRank(d *daemon, r rankID) {
	ms, status := s.opt.RankMS, s.opt.RankStatus[r.rank]
	if j, ok := s.jobs[r.job]; ok {
		ms, status = cmp.Or(j.ms, ms), j.status[r.rank]
	}
	if ms < 0 {
		return
	}
	s.push(s.now+ms, func() { s.rankEnds(d, r, status, fmt.Sprintf("exited with status %d", status)) })
}

func (s *Sim) rankEnds(d *daemon, r rankID, status int, how string) {
	if d.dead || d.ranks[r] == nil {
		return
	}
	delete(d.ranks, r)
	s.step(d, protocol.RankExited{Job: r.job, Rank: r.rank, Status: status, How: how})
	s.step(d, protocol.RankDrained{Job: r.job, Rank: r.rank})
}

// signalRanks: KILL and TERM end a rank of job (or of every job) a
// moment later; a rank ignores any other signal (a stopped rank is as
// good as a running one here).
func (s *Sim) signalRanks(d *daemon, sig, job int) {
	if sig != protocol.SIGKILL && sig != protocol.SIGTERM {
		return
	}
	for _, r := range sortedRanks(d.ranks) {
		if job == protocol.AllJobs || r.job == job {
			s.push(s.now+1, func() { s.rankEnds(d, r, 128+sig, fmt.Sprintf("was killed by signal %d", sig)) })
		}
	}
}

func (s *Sim) setTimer(d *daemon, t protocol.Timer, ms int64) {
	s.seq++
	gen := s.seq
	if d.timers == nil {
		d.timers = map[protocol.Timer]int64{}
	}
	d.timers[t] = gen
	s.push(s.now+ms*s.opt.TicksPerMS, func() {
		if d.timers[t] != gen {
			return // cancelled or set again
		}
		delete(d.timers, t)
		s.step(d, protocol.TimerFired{Timer: t})
	})
}

// exit ends a daemon as the machine decided. When mpirun exits the run
// goes on until the orteds have noticed (their lifelines end).
func (s *Sim) exit(d *daemon, status int) {
	if d.id == 0 {
		s.Status, s.ExitAt, s.Done = status, s.now, true
		s.RunningAtExit = s.Running()
		s.die(d, "")
		return
	}
	how := "exit status 0"
	if status != 0 {
		how = fmt.Sprintf("exit status %d", status)
	}
	d.orphaned = status == protocol.OrphanStatus
	s.die(d, how)
}

// Running lists the orteds still alive.
func (s *Sim) Running() []string {
	var out []string
	for _, d := range s.d[1:] {
		if d.created && !d.dead {
			out = append(out, s.opt.Job.Hosts[d.id])
		}
	}
	return out
}

func (s *Sim) trace(d *daemon, a protocol.Action) {
	if s.opt.Trace == nil {
		return
	}
	if line := Describe(a, func(l protocol.LinkID) int { return s.peer(d.id, l) }); line != "" {
		s.tracef("d%d %s", d.id, line)
	}
}

// peer is the daemon at the other end of daemon id's link l; 0 once the
// link closed.
func (s *Sim) peer(id int, l protocol.LinkID) int {
	if e := s.end(id, l); e != nil && e.open {
		return e.other.daemon
	}
	return 0
}

// item is an event: f, or when f is nil the arrival of msg at to.
// Messages, the bulk of the events, need no closure of their own.
type item struct {
	at, seq int64
	f       func()
	to      end
	msg     protocol.Message
}

// events is a binary min-heap of items by (at, seq), held by value.
type events []item

func (q events) less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}

func (q *events) push(x item) {
	*q = append(*q, x)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *events) pop() item {
	h := *q
	top, last := h[0], len(h)-1
	h[0], h[last] = h[last], item{} // let the collector have what it held
	h = h[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	*q = h
	return top
}
