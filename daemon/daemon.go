// Package daemon is the event loop that mpirun (daemon 0) and every orted
// run. One goroutine owns all state and drives the pure machines: phase 1
// (spawn), phase 2 and the router (routed), and the job's end (milestones,
// failures, teardown). Other goroutines only read sockets, pipes and
// processes and post what they saw to the loop.
package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/errmgr"
	"prsh/iof"
	"prsh/routed"
	"prsh/spawn"
	"prsh/spawn/launch"
	"prsh/topo"
	"prsh/transport"
)

// Config starts a daemon.
type Config struct {
	ID         int
	Node       string // this daemon's node name
	ParentAddr string // contact address of the spawn parent; "" for mpirun
	Secret     []byte
	Bind       string // IP address to listen on and dial from; "" = any
	Log        hclog.Logger
	Lifeline   io.Reader // orted: its stdin; EOF means the parent is gone

	// mpirun only.
	Job         JobSpec
	Nodes       []spawn.Node
	App         Launch
	Agent       launch.Agent
	Stdout      io.Writer
	Stderr      io.Writer
	Signals     <-chan os.Signal
	ReportTimes bool
	Start       time.Time // when mpirun started, for --report-launch-times
	Output      iof.Options
	Stdin       io.Reader     // what goes to the ranks' stdin; nil = nothing
	Timeout     time.Duration // abort the job after this long; 0 = never
	// Remap places the ranks again without the skipped daemons (by id),
	// for --on-unreachable skip; it returns the daemon of each rank.
	Remap func(skipped map[int]bool) ([]int, error)
}

// Daemon is one daemon's state, owned by its event loop.
type Daemon struct {
	cfg    Config
	log    hclog.Logger
	events chan func()
	ctx    context.Context
	stop   context.CancelFunc
	// orphaned closes when an orted's lifeline (its stdin) ends: from its
	// first moment, so that an orted still calling back a dead parent
	// gives up at once instead of retrying until the deadline.
	orphaned chan struct{}

	job       JobSpec
	ln        *transport.Listener
	addr      string
	parent    *link
	links     map[int]*link
	dialing   map[int][]any
	spawnTree topo.Tree
	routing   routed.Topology
	phase1    *spawn.Phase1
	gather    *routed.Allgather
	router    *routed.Router[any]
	agent     launch.Agent
	children  map[int]*child

	sink        iof.Sink
	terminal    *iof.Terminal
	upStream    io.Closer
	fanout      *iof.Fanout
	acks        map[int]bool // children yet to acknowledge a signal
	ackWait     bool
	stopPending bool // Ctrl-Z: stop mpirun once the ranks are stopped

	launchGot bool
	skipped   map[int]bool // mpirun: daemons left out
	app       Launch
	ranks     map[int]*rank
	progress  [numMilestones]milestone

	ending   bool
	finished bool
	policy   errmgr.Policy // mpirun: how the job ends
	exit     chan int
}

type milestone struct {
	local    bool
	children map[int]bool
	reported bool
	at       time.Duration
}

// Run runs the daemon until the job is over and returns its exit status.
func Run(ctx context.Context, cfg Config) (int, error) {
	d := &Daemon{
		cfg: cfg, log: cfg.Log, events: make(chan func(), 256),
		links: map[int]*link{}, dialing: map[int][]any{}, children: map[int]*child{},
		ranks: map[int]*rank{}, exit: make(chan int, 1), skipped: map[int]bool{},
	}
	if d.log == nil {
		d.log = hclog.NewNullLogger()
	}
	d.ctx, d.stop = context.WithCancel(ctx)
	defer d.stop()
	for i := range d.progress {
		d.progress[i].children = map[int]bool{}
	}
	if cfg.Lifeline != nil {
		d.orphaned = make(chan struct{})
		go d.watchLifeline()
	}
	if err := d.listen(); err != nil {
		return errmgr.StatusFailed, err
	}
	defer d.ln.Close()
	if err := d.bootstrap(); err != nil {
		return errmgr.StatusFailed, err
	}
	go d.acceptLoop()
	return d.loop(), nil
}

func (d *Daemon) isRoot() bool { return d.cfg.ID == 0 }

// post hands work to the event loop; it drops it once the loop is gone.
func (d *Daemon) post(f func()) { d.postOr(f) }

func (d *Daemon) after(delay time.Duration, f func()) {
	time.AfterFunc(delay, func() { d.post(f) })
}

func (d *Daemon) loop() int {
	orphaned := d.orphaned
	for {
		select {
		case f := <-d.events:
			f()
		case sig := <-d.cfg.Signals:
			d.caught(sig)
		case status := <-d.exit:
			return status
		case <-orphaned:
			orphaned = nil // handled once
			d.lifelineLost("its parent's session ended")
		case <-d.ctx.Done():
			d.killRanks(syscall.SIGKILL)
			return errmgr.StatusFailed
		}
	}
}

func (d *Daemon) listen() error {
	host := d.cfg.Bind
	ln, err := transport.Listen(hostPort(host), d.cfg.Secret, transport.Options{Logger: d.log.Named("transport")})
	if err != nil {
		return fmt.Errorf("%s: cannot listen on %q: %w", d.cfg.Node, host, err)
	}
	d.ln = ln
	d.addr = transport.URI(ln.Addr())
	return nil
}

func hostPort(ip string) string { return net.JoinHostPort(ip, "0") }

// bootstrap sets the machines up: mpirun from its config, an orted from
// the Welcome its parent sends when it calls back.
func (d *Daemon) bootstrap() error {
	if d.isRoot() {
		d.terminal = iof.NewTerminal(d.cfg.Stdout, d.cfg.Stderr, d.cfg.Output)
		d.sink = d.terminal
		d.agent = d.cfg.Agent
		if err := d.setup(d.cfg.Job, -1); err != nil {
			return err
		}
		d.post(func() { d.startRoot() })
		return nil
	}
	welcome, err := d.callBack()
	if err != nil && d.isOrphaned() {
		return fmt.Errorf("%s: its parent's session ended while it called back", d.cfg.Node)
	}
	if err != nil {
		return err
	}
	if err := d.setup(welcome.Job, welcome.Parent); err != nil {
		return err
	}
	agent, err := agentFor(welcome.Job, d.log)
	if err != nil {
		return fmt.Errorf("%s: %w", d.cfg.Node, err)
	}
	d.agent = agent
	d.post(func() { d.startOrted(welcome.Nodes) })
	d.adoptParent(welcome.Parent)
	return nil
}

// setup builds the spawn tree, the routing topology and the machines.
// parent is the daemon that spawned this one: its parent in the spawn
// tree, or the grandparent that adopted it when the parent was skipped.
func (d *Daemon) setup(job JobSpec, parent int) error {
	d.job = job
	radix := job.RoutedRadix
	if radix <= 0 {
		radix = job.SpawnDegree
	}
	if radix <= 0 {
		radix = routed.DefaultRadix
	}
	rt, err := routed.New(job.Routed, job.Daemons, radix)
	if err != nil {
		return err
	}
	d.routing = rt
	d.spawnTree = rt.Tree()
	if job.SpawnDegree > 0 {
		d.spawnTree = topo.Radix(job.Daemons, job.SpawnDegree)
	}
	d.phase1 = spawn.NewPhase1(d.cfg.ID, d.spawnTree)
	if job.SkipUnreachable {
		d.phase1.AdoptOrphans()
	}
	d.gather = routed.NewAllgather(d.cfg.ID, d.addr, parent, d.spawnTree.Children(d.cfg.ID), job.Daemons)
	d.router = routed.NewRouter[any](d.cfg.ID, rt, d.reachable)
	tree, self := d.spawnTree, d.cfg.ID
	d.fanout = iof.NewFanout(self, tree.Parent)
	return nil
}

// reachable says whether a message to id can go out now: a link exists or
// phase 2 told us its address.
func (d *Daemon) reachable(id int) bool {
	if _, ok := d.links[id]; ok {
		return true
	}
	_, ok := d.gather.Lookup(id)
	return ok
}

func (d *Daemon) startRoot() {
	if d.cfg.Timeout > 0 {
		d.after(d.cfg.Timeout, d.timedOut)
	}
	d.startPhase1(d.cfg.Nodes)
	d.startPhase2()
	if !d.job.SkipUnreachable {
		d.receiveLaunch(d.cfg.App) // overlaps phases 1 and 2
	}
}

// launchSurvivors starts the application on the nodes that came up, once
// phase 1 is over everywhere (mpirun --on-unreachable skip).
func (d *Daemon) launchSurvivors() {
	app := d.cfg.App
	if len(d.skipped) > 0 {
		rankNode, err := d.cfg.Remap(d.skipped)
		if err != nil {
			d.fail(Failure{Msg: err.Error(), Status: errmgr.StatusFailed})
			return
		}
		app.RankNode = rankNode
	}
	d.receiveLaunch(app)
}

func (d *Daemon) startOrted(nodes []spawn.Node) {
	d.startPhase1(nodes)
	d.startPhase2()
}

func (d *Daemon) hostOf(id int) string {
	if id >= 0 && id < len(d.job.Hosts) {
		return d.job.Hosts[id]
	}
	return fmt.Sprintf("daemon %d", id)
}

// caught handles a signal delivered to mpirun.
func (d *Daemon) caught(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	switch s {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
		if d.ending {
			d.killEverything()
			return
		}
		d.fail(Failure{Msg: fmt.Sprintf("caught SIG%s, terminating the job", errmgr.SignalName(s)), Status: 128 + int(s)})
	case syscall.SIGTSTP:
		// Stop the ranks, and mpirun itself once they are stopped.
		d.stopPending = true
		d.signal(Signal{Sig: int(syscall.SIGSTOP), Ack: true})
		d.after(2*time.Second, d.stopSelf)
	default:
		d.signal(Signal{Sig: int(s)})
	}
}

func (d *Daemon) timedOut() {
	d.fail(Failure{Msg: fmt.Sprintf("the job ran past --timeout %v, terminating it", d.cfg.Timeout), Status: errmgr.StatusTimeout})
}
