package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/errmgr/status"
	"prsh/iof"
	"prsh/ranks"
	"prsh/spawn/agent"
)

// cluster is a job's daemons in one test process: mpirun and every orted
// run daemon.Run over a MemNetwork and one ManualClock, their ranks are
// fakeRanks and their launch agent starts a child's daemon.Run in a
// goroutine (fakeAgent).
type cluster struct {
	sc      scenario
	net     *MemNetwork
	clock   *ManualClock
	secret  []byte
	log     hclog.Logger
	mu      sync.Mutex
	started map[int]int // rank → the daemon that started it
	orteds  map[int]*fakeOrted
	running sync.WaitGroup // orteds whose Run has not returned
	ranksUp chan struct{}  // one token per rank started
	stopped chan struct{}  // one token per time mpirun stopped itself
	stops   int            // the times playTimed saw it stop
	groups  atomic.Int32   // the job steps started (fakeGroup)
	// dvmJobs, by number, replace the scenario's rank statuses and time
	// with each DVM job's own.
	dvmJobs map[int]dvmSubmit
}

// statusOf is the exit status rank of job (0: a plain mpirun's) is to
// end with.
func (c *cluster) statusOf(job, rank int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.dvmJobs[job]; ok {
		return s.status[rank]
	}
	return c.sc.rankStatus[rank]
}

// rankMSOf is how long the ranks of job run (-1: until signalled).
func (c *cluster) rankMSOf(job int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.dvmJobs[job]; ok && s.rankMS > 0 {
		return s.rankMS
	}
	return c.sc.rankMS
}

// jobOf reads a DVM rank's job from its PMI_JOBID (the job's ID, "_",
// the job's number); 0 outside a DVM.
func (c *cluster) jobOf(env []string) int {
	if !c.sc.dvm {
		return 0
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PMI_JOBID="); ok {
			n, _ := strconv.Atoi(v[strings.LastIndex(v, "_")+1:])
			return n
		}
	}
	return 0
}

// fakeOrted is one in-process orted, seen as its parent's agent sees it.
type fakeOrted struct {
	id       int
	host     *MemHost
	agent    *fakeAgent
	stop     context.CancelFunc
	lifeline *io.PipeWriter
	alive    chan struct{}
	done     chan struct{}
	err      error // how it ended, once done
}

// starter makes a node's fake ranks.
func (c *cluster) starter(node int) func(hclog.Logger, func(ranks.Event)) ranks.Starter {
	return func(_ hclog.Logger, report func(ranks.Event)) ranks.Starter {
		return &fakeRanks{c: c, node: node, report: report, live: map[int]chan syscall.Signal{}}
	}
}

// fakeRanks starts no process: each rank "runs" in a goroutine, enters
// the scenario's fences over its real PMI socket, and exits as the
// scenario says, or when signalled.
type fakeRanks struct {
	c      *cluster
	node   int
	report func(ranks.Event)
	mu     sync.Mutex
	live   map[int]chan syscall.Signal
	closed bool
}

func (f *fakeRanks) Start(req ranks.Request) []ranks.NotStarted {
	var failed []ranks.NotStarted
	for _, r := range req.Ranks {
		att, err := req.Attach(r.ID)
		if err != nil {
			failed = append(failed, ranks.NotStarted{Rank: r.ID, Status: 127, Err: err.Error()})
			continue
		}
		sig := make(chan syscall.Signal, 4)
		f.mu.Lock()
		f.live[r.ID] = sig
		f.mu.Unlock()
		f.c.rankStarted(r.ID, f.node)
		att.Started()
		go f.run(f.c.jobOf(att.Env), r.ID, att, sig, req.Output)
	}
	return failed
}

// run is one rank's life (of job): its fences, then its end.
func (f *fakeRanks) run(job, rank int, att ranks.Attachment, sig chan syscall.Signal, output iof.Sink) {
	pmi := att.Files[0]
	ws := f.life(job, rank, pmi, sig)
	pmi.Close()
	iof.Pump(output, rank, iof.Stdout, strings.NewReader(rankLine(rank)))
	iof.Pump(output, rank, iof.Stderr, strings.NewReader(""))
	f.mu.Lock()
	delete(f.live, rank)
	closed := f.closed
	f.mu.Unlock()
	att.Ended(status.ExitStatus(ws))
	if !closed {
		f.report(ranks.Exited{Rank: rank, Status: status.ExitStatus(ws), How: status.Describe(ws)})
		f.report(ranks.Drained{Rank: rank})
	}
}

// rankLine is what a rank writes on its stdout.
func rankLine(rank int) string { return fmt.Sprintf("rank %d ran\n", rank) }

// life runs the rank until it exits or a signal ends it.
func (f *fakeRanks) life(job, rank int, pmi *os.File, sig chan syscall.Signal) syscall.WaitStatus {
	sc := f.c.sc
	if sc.fences > 0 {
		fenced := make(chan error, 1)
		go func() { fenced <- fences(pmi, rank, sc.fences) }()
		select {
		case err := <-fenced:
			if err != nil {
				f.c.log.Error("fake rank", "rank", rank, "error", err)
				return syscall.WaitStatus(99 << 8)
			}
		case s := <-sig:
			return syscall.WaitStatus(s)
		}
	}
	var exit <-chan time.Time
	if ms := f.c.rankMSOf(job); ms >= 0 {
		exit = time.After(time.Duration(ms) * time.Millisecond)
	}
	select {
	case <-exit:
		return syscall.WaitStatus(f.c.statusOf(job, rank) << 8)
	case s := <-sig:
		return syscall.WaitStatus(s)
	}
}

// fences speaks PMI-1 as an MPI library would: init, n barriers,
// finalize.
func fences(pmi io.ReadWriter, rank, n int) error {
	in := bufio.NewReader(pmi)
	call := func(cmd, want string) error {
		if _, err := fmt.Fprintf(pmi, "cmd=%s\n", cmd); err != nil {
			return err
		}
		line, err := in.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		if firstField(line) != want {
			return fmt.Errorf("%s: answered %q", cmd, line)
		}
		return nil
	}
	if err := call("init pmi_version=1 pmi_subversion=1", "cmd=response_to_init"); err != nil {
		return err
	}
	for range n {
		if err := call("barrier_in", "cmd=barrier_out"); err != nil {
			return err
		}
	}
	return call("finalize", "cmd=finalize_ack")
}

func firstField(line string) string {
	for i, c := range line {
		if c == ' ' || c == '\n' {
			return line[:i]
		}
	}
	return line
}

// Signal ends every live rank on a signal that ends a process; a stop
// or a continue leaves them be, as a rank that is not stopped.
func (f *fakeRanks) Signal(s syscall.Signal) {
	if s == syscall.SIGTSTP || s == syscall.SIGSTOP || s == syscall.SIGCONT {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sig := range f.live {
		select {
		case sig <- s:
		default:
		}
	}
}

func (f *fakeRanks) Live(rank int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.live[rank]
	return ok
}

// Close kills what is left; the daemon is ending and hears of it no more.
func (f *fakeRanks) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.Signal(syscall.SIGKILL)
}

func (c *cluster) rankStarted(rank, node int) {
	c.mu.Lock()
	c.started[rank] = node
	c.mu.Unlock()
	c.ranksUp <- struct{}{}
}

// fakeAgent launches orteds as goroutines of this process.
type fakeAgent struct {
	c        *cluster
	mu       sync.Mutex
	children []*fakeOrted
}

func (a *fakeAgent) Start(ctx context.Context, host string, argv []string, stdin []byte) (agent.Process, error) {
	id, parent := flagValue(argv, "--id"), flagValue(argv, "--parent")
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil, fmt.Errorf("orted argv %q: no --id", argv)
	}
	if why, ok := a.c.sc.refuse[n]; ok {
		return nil, fmt.Errorf("%s", why)
	}
	o := a.c.startOrted(n, host, parent)
	a.mu.Lock()
	a.children = append(a.children, o)
	a.mu.Unlock()
	return o, nil
}

func flagValue(argv []string, name string) string {
	if i := slices.Index(argv, name); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// startOrted runs daemon id's Run in a goroutine, as its session would.
func (c *cluster) startOrted(id int, node, parent string) *fakeOrted {
	lifeline, hangUp := io.Pipe()
	ctx, stop := context.WithCancel(context.Background())
	o := &fakeOrted{id: id, host: c.net.Host(), agent: &fakeAgent{c: c}, stop: stop, lifeline: hangUp,
		alive: make(chan struct{}), done: make(chan struct{})}
	close(o.alive)
	c.mu.Lock()
	c.orteds[id] = o
	c.mu.Unlock()
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		code, err := Run(ctx, Config{
			ID: id, Node: node, ParentAddr: parent, Secret: c.secret, Lifeline: lifeline,
			Timeouts: c.sc.job().Timeouts, Log: c.log.Named(node),
			Network: o.host, Clock: c.clock, Ranks: c.starter(id), Agent: o.agent,
		})
		o.host.Crash() // its process ends, and its sockets with it
		if ctx.Err() != nil {
			// Killed: its parent learns of the session's end after
			// its links dropped, as over ssh.
			time.Sleep(100 * time.Millisecond)
			o.end(137, nil)
			return
		}
		o.end(code, err)
	}()
	return o
}

func (o *fakeOrted) end(code int, err error) {
	switch {
	case err != nil:
		o.err = &agent.ExitError{Status: 1, Stderr: err.Error()}
	case code == 137:
		o.err = &agent.ExitError{Status: code, Signal: "KILL"}
	case code != 0:
		o.err = &agent.ExitError{Status: code}
	}
	close(o.done)
}

func (o *fakeOrted) Wait() error {
	<-o.done
	return o.err
}

func (o *fakeOrted) Alive() <-chan struct{} { return o.alive }

// Close ends the session: the orted's lifeline, then the orted itself
// if it has not ended within a moment.
func (o *fakeOrted) Close() error {
	o.lifeline.Close()
	select {
	case <-o.done:
	case <-time.After(2 * time.Second):
		o.Kill()
	}
	return nil
}

// Kill ends the orted at once, as SIGKILL would: its links drop, and the
// sessions it started end, which orphans its children.
func (o *fakeOrted) Kill() error {
	o.stop()
	o.host.Crash()
	o.lifeline.Close()
	o.agent.mu.Lock()
	children := slices.Clone(o.agent.children)
	o.agent.mu.Unlock()
	for _, child := range children {
		child.lifeline.Close()
	}
	<-o.done
	return nil
}
