// Package daemon is the driver of the daemon's protocol: the event loop
// that mpirun (daemon 0) and every orted run. The protocol itself (phases
// 1 to 3, milestones, signals, failures, teardown) is the pure machine of
// daemon/protocol; this package brings what it cannot have: sockets, ssh
// sessions, processes, pipes and clocks. One goroutine owns the machine
// and everything here; other goroutines only read sockets, pipes and
// processes and post what they saw to it as typed events.
package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/protocol"
	"prsh/errmgr"
	"prsh/errmgr/status"
	"prsh/internal/tcp"
	"prsh/internal/timeouts"
	"prsh/iof"
	"prsh/modex/pmi"
	"prsh/ranks"
	"prsh/spawn"
	"prsh/spawn/agent"
	"prsh/stage"
)

// Config starts a daemon.
type Config struct {
	ID         int
	Node       string // this daemon's node name
	ParentAddr string // contact address of the spawn parent; "" for mpirun
	Secret     []byte
	Bind       string    // IP address to listen on and dial from; "" = any
	Ports      tcp.Ports // where to listen (--port-range); zero: any port
	Log        hclog.Logger
	Lifeline   io.Reader // orted: its stdin; EOF means the parent is gone
	// Timeouts are the job's bounds on a stall: an orted's come on its
	// command line, as it needs them before the job's Welcome (its
	// links' silence, its callback); mpirun's are its Job's. A zero field
	// is its default.
	Timeouts timeouts.Timeouts

	// The driver's seams; nil is production's. Network: TCP with Secret,
	// Bind and Ports. Clock: the wall clock. Ranks: the node's real ranks
	// (a ranks.NodeGuard's Job).
	Network Network
	Clock   Clock
	Ranks   func(log hclog.Logger, report func(ranks.Event)) ranks.Starter
	// StopSelf stops mpirun's process on Ctrl-Z; nil sends it SIGSTOP.
	StopSelf func()

	// Agent starts the children's orteds: mpirun's always; an orted's
	// when set, instead of the one its job names (a test's seam).
	Agent agent.Agent

	// mpirun only.
	Job    protocol.JobSpec
	Nodes  []spawn.Node
	App    protocol.Launch
	Stdout io.Writer
	Stderr io.Writer
	// Waiting shows the launch's progress (who has not called back) on
	// stderr; it should be Stderr itself, so that the line never mixes
	// with other output. nil shows none.
	Waiting     *iof.WaitingLine
	Signals     <-chan os.Signal
	ReportTimes bool
	Start       time.Time // when mpirun started, for --report-launch-times
	Output      iof.Options
	Stdin       io.Reader     // what goes to the ranks' stdin; nil = nothing
	Timeout     time.Duration // abort the job after this long; 0 = never
	// Remap places the ranks again without the skipped daemons (by id),
	// for --on-unreachable skip; it returns the daemon of each rank.
	Remap func(skipped map[int]bool) ([]int, error)
	// DVM keeps the daemons up for the jobs of clients (Job.DVM).
	DVM *DVMConfig
	// ChildJobs is where child jobs (MPI_Comm_spawn) may be placed.
	ChildJobs ChildJobSlots
}

// Daemon is one daemon's driver state, owned by its event loop.
type Daemon struct {
	cfg     Config
	log     hclog.Logger
	events  chan any // protocol.Event, or one of this package's events
	ctx     context.Context
	stop    context.CancelFunc
	machine *protocol.Machine
	next    []protocol.Event // produced while carrying out actions
	// orphaned closes when an orted's lifeline (its stdin) ends: from its
	// first moment, so that an orted still calling back a dead parent
	// gives up at once instead of retrying until the deadline.
	orphaned chan struct{}

	network   Network
	clock     Clock
	ln        Listener
	addr      string
	agent     agent.Agent // nil in an orted until its first spawn (launchAgent)
	agentErr  error
	lastSpawn <-chan struct{} // closes once the last session asked for has started (agent.InTurn)
	parent    *link
	links     map[protocol.LinkID]*link
	lastLink  protocol.LinkID
	procs     map[int]agent.Process // children's launch agent processes
	timers    map[protocol.Timer]*timer
	// jobs are the local ranks of each job, by job (jobranks.go): a plain
	// mpirun's job 0, a DVM's jobs from their start here to their release.
	jobs map[int]*jobRanks
	// nodeGuard starts every job's ranks, for the daemon's life.
	nodeGuard *ranks.NodeGuard
	dvm       *dvmRoot // mpirun of a DVM: its clients

	nodeAttrs nodeAttrs
	pmix      *pmixHost       // the PMIx server of the local ranks, once started
	pmixBoot  <-chan pmixBoot // the PMIx server booting, until startPMIx takes it
	pmixWhy   error           // why there is no PMIx server, when there is none
	names     nameCalls       // the ranks' name requests in flight (names.go)
	tripwire  string          // the address of the ranks' PMIx tripwire, once open
	pmiPort   *pmi.Port       // PMI_PORT of the local ranks, once open
	staged    *stage.Copy     // orted: this node's copy of the staged files
	// childReqs are the ranks' requests for child jobs in flight;
	// lastChild numbers a plain mpirun's child jobs (childjobs.go).
	childReqs childRequests
	lastChild int
	// addedSlots are the slots of the hosts child jobs added, by name.
	addedSlots map[string]int

	sink      iof.Sink
	terminal  *iof.Terminal
	upStream  io.Closer
	stdinTree *iof.StdinTree

	reachedAt [protocol.NumMilestones]time.Duration
	reached   [protocol.NumMilestones]bool
	exit      chan int

	// maxMessage bounds a message on this daemon's links; 0 means the
	// default, maxMessage. Tests lower it.
	maxMessage int
}

// Run runs the daemon until the job is over and returns its exit status.
func Run(ctx context.Context, cfg Config) (int, error) {
	d := &Daemon{
		cfg: cfg, log: cfg.Log, events: make(chan any, 256),
		links: map[protocol.LinkID]*link{}, procs: map[int]agent.Process{},
		timers: map[protocol.Timer]*timer{}, jobs: map[int]*jobRanks{}, exit: make(chan int, 1),
	}
	if d.log == nil {
		d.log = hclog.NewNullLogger()
	}
	if d.isRoot() {
		d.cfg.Timeouts = cfg.Job.Timeouts
	}
	d.cfg.Timeouts = d.cfg.Timeouts.WithDefaults()
	d.ctx, d.stop = context.WithCancel(ctx)
	d.network, d.clock = cfg.Network, cfg.Clock
	if d.network == nil {
		d.network = tcpNetwork{cfg.Secret, d.transportOptions()}
	}
	if d.clock == nil {
		d.clock = wallClock{}
	}
	if d.cfg.StopSelf == nil {
		d.cfg.StopSelf = func() { syscall.Kill(os.Getpid(), syscall.SIGSTOP) }
	}
	defer d.stop()
	defer d.stopPMIx()
	defer func() { d.nodeGuard.Close() }() // after the last job's starter
	defer d.closeStarters()
	defer d.removeStage()
	if cfg.Lifeline != nil {
		d.orphaned = make(chan struct{})
		go d.watchLifeline()
	}
	if d.isRoot() {
		d.prestartGuard(cfg.Job)
	}
	if err := d.listen(); err != nil {
		return errmgr.StatusFailed, err
	}
	if d.isRoot() && cfg.DVM != nil {
		if err := d.listenDVM(); err != nil {
			return errmgr.StatusFailed, err
		}
	}
	defer d.ln.Close()
	if err := d.bootstrap(); err != nil {
		return errmgr.StatusFailed, err
	}
	go d.acceptLoop()
	d.act(d.machine.Start())
	if d.parent != nil {
		d.serve(d.parent)
	}
	return d.loop(), nil
}

func (d *Daemon) isRoot() bool { return d.cfg.ID == 0 }

func (d *Daemon) loop() int {
	orphaned := d.orphaned
	for {
		// A signal goes before the events already queued: Slurm's SIGTERM
		// at a time limit reaches the ranks too, and an orted that took
		// their exits first could end with the job as if it succeeded.
		select {
		case sig := <-d.cfg.Signals:
			d.signalled(sig)
			continue
		default:
		}
		select {
		case ev := <-d.events:
			d.handle(ev)
		case sig := <-d.cfg.Signals:
			d.signalled(sig)
		case code := <-d.exit:
			return code
		case <-orphaned:
			orphaned = nil // handled once
			d.step(protocol.Orphaned{Why: "its parent's session ended"})
		case <-d.ctx.Done():
			d.signalRanks(syscall.SIGKILL, protocol.AllJobs)
			return errmgr.StatusFailed
		}
	}
}

// signalled hands the machine a signal delivered to this process.
func (d *Daemon) signalled(sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		d.step(protocol.Interrupt{Sig: int(s), Name: status.SignalName(s)})
	}
}

// post hands an event to the loop and reports whether the loop took it.
func (d *Daemon) post(ev any) bool {
	select {
	case d.events <- ev:
		return true
	case <-d.ctx.Done():
		return false
	}
}

// step feeds the machine one event and carries out what it asks.
func (d *Daemon) step(ev protocol.Event) { d.act(d.machine.Step(ev)) }

// act carries out actions, then the events that carrying them out
// produced at once (a rank that could not start), in order.
func (d *Daemon) act(acts []protocol.Action) {
	d.carry(acts)
	for len(d.next) > 0 {
		ev := d.next[0]
		d.next = d.next[1:]
		d.carry(d.machine.Step(ev))
	}
}

func (d *Daemon) listen() error {
	host := d.cfg.Bind
	ln, err := d.network.Listen(host)
	if err != nil {
		return fmt.Errorf("%s: cannot listen on %q: %w", d.cfg.Node, host, err)
	}
	d.ln = ln
	d.addr = ln.Addr()
	return nil
}

// bootstrap builds the machine: mpirun's from its config, an orted's from
// the Welcome its parent sends when it calls back.
func (d *Daemon) bootstrap() error {
	mc := protocol.Config{ID: d.cfg.ID, Node: d.cfg.Node, Addr: d.addr, Parent: -1}
	if d.isRoot() {
		d.terminal = iof.NewTerminal(d.cfg.Stdout, d.cfg.Stderr, d.cfg.Output)
		d.sink = d.terminal
		if d.dvm != nil {
			d.sink = d.dvm.sink
		}
		d.agent = d.cfg.Agent
		mc.Job, mc.Nodes, mc.App, mc.Remap = d.cfg.Job, d.cfg.Nodes, d.cfg.App, d.cfg.Remap
		mc.TimeoutMS = d.cfg.Timeout.Milliseconds()
	} else {
		welcome, err := d.callBack()
		if err != nil && d.isOrphaned() {
			return fmt.Errorf("%s: its parent's session ended while it called back", d.cfg.Node)
		}
		if err != nil {
			return err
		}
		d.agent = d.cfg.Agent
		d.bootPMIx(welcome.Job)
		d.prestartGuard(welcome.Job)
		mc.Job, mc.Nodes, mc.Parent, mc.ParentLink = welcome.Job, welcome.Nodes, welcome.Parent, d.parent.id
		d.makeStage(welcome.Job)
	}
	m, err := protocol.New(mc)
	if err != nil {
		return err
	}
	d.machine = m
	d.stdinTree = iof.NewStdinTree(d.cfg.ID, m.SpawnParent)
	return nil
}
