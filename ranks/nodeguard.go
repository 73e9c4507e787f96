package ranks

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/internal/stall"
	"prsh/iof"
	"prsh/ranks/guard"
)

// NodeGuard is the node's guard as a daemon holds it for its whole life:
// one process that starts the ranks of every job the daemon runs (a
// DVM's, job after job) and kills each job's at that job's end
// (Node.Close), not itself. Its start is most of a small job's cost on a
// node, so a DVM pays it once. It starts as the daemon does (Prestart) or
// at its first rank, and again at the next start after one that ended.
type NodeGuard struct {
	log   hclog.Logger
	pumps *iof.Pumps // read the ranks' output pipes, of every job

	mu    sync.Mutex
	guard *guard.Guard // once started, until it ends
	// heardAt is when the guard last reported, for watchAnswers, and
	// heardLost this process's stalls until then (internal/stall).
	heardAt   time.Time
	heardLost time.Duration
	jobs      map[int]*Node // the jobs that hear the guard's reports, by number
	lastJob   int
}

// NewNodeGuard makes the node's guard, to be started at the first rank.
func NewNodeGuard(log hclog.Logger) *NodeGuard {
	return &NodeGuard{log: log, pumps: iof.NewPumps(), jobs: map[int]*Node{}}
}

// Job makes the Starter of a new job's ranks; report hears every Event
// after a rank's start.
func (h *NodeGuard) Job(log hclog.Logger, report func(Event)) *Node {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastJob++
	n := &Node{log: log, report: report, host: h, job: h.lastJob, ranks: map[int]*rank{},
		kernelLoggedOOMKill: guard.KernelLoggedOOMKill}
	h.jobs[n.job] = n
	return n
}

// forget stops passing the guard's reports on job to its Node.
func (h *NodeGuard) forget(job int) {
	h.mu.Lock()
	delete(h.jobs, job)
	h.mu.Unlock()
}

// current is the guard while it runs; nil before its start or after its
// end.
func (h *NodeGuard) current() *guard.Guard {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.guard
}

// guardQuiet is how often mpirun or an orted looks whether the guard it
// told to end can still act (guard.AwaitEnd), and guardEndLimit how long
// it waits for one that can: its kill of what is left takes
// milliseconds, but a loaded machine (load 65, the job on one CPU) once
// kept a live guard from ending within 5 s.
const (
	guardQuiet    = 2 * time.Second
	guardEndLimit = 30 * time.Second
)

// Close ends the guard, which kills everything left under it, and waits
// until it has (while it can act, up to guardEndLimit): nothing of the
// daemon's jobs outlives the daemon. A nil NodeGuard (a daemon with no ranks of its
// own to start) has nothing to end.
func (h *NodeGuard) Close() {
	if h == nil {
		return
	}
	g := h.current()
	if g == nil {
		return
	}
	g.End()
	if !g.AwaitEnd(guardQuiet, guardEndLimit) {
		h.log.Warn("the ranks' guard did not end; killing it", "pid", g.Pid())
		g.KillProcess()
	}
}

// Prestart starts the node's guard before its first rank, for its start
// to overlap the daemon's other work. An error is left to the first
// start of ranks, which tries again and reports it.
func (h *NodeGuard) Prestart(stoppedLimit time.Duration) {
	h.start(stoppedLimit)
}

// start starts the node's guard unless it runs.
func (h *NodeGuard) start(stoppedLimit time.Duration) (*guard.Guard, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.guard != nil {
		return h.guard, nil
	}
	g, err := guard.Start(stoppedLimit)
	if err != nil {
		return nil, err
	}
	h.guard = g
	h.log.Debug("the node's guard runs", "pid", g.Pid(), "started at init", g.Early())
	go h.listen(g)
	return g, nil
}

// listen hears the guard's reports until it ends, and passes each on to
// its job.
func (h *NodeGuard) listen(g *guard.Guard) {
	for {
		rep, err := g.Next()
		if err != nil {
			break
		}
		h.mu.Lock()
		h.heard()
		n := h.jobs[rep.Job]
		h.mu.Unlock()
		if n != nil {
			n.heard(rep)
		}
	}
	ws := g.Wait()
	h.mu.Lock()
	if h.guard == g {
		h.guard = nil
	}
	jobs := make([]*Node, 0, len(h.jobs))
	for _, n := range h.jobs {
		jobs = append(jobs, n)
	}
	h.mu.Unlock()
	for _, n := range jobs {
		n.guardEnded(g, ws)
	}
}

// watchAnswers kills guard g if it stays silent for limit while a start
// waits on it (a guard stopped by hand, or stuck in the kernel): the
// daemon's loop must not wait on it for ever. The listener then fails
// the ranks with the guard's status. Slow is not failed: each report
// heard from the guard starts the bound again. The returned func ends
// the watch.
func (h *NodeGuard) watchAnswers(g *guard.Guard, limit time.Duration) (stop func()) {
	done := make(chan struct{})
	h.mu.Lock()
	h.heard()
	h.mu.Unlock()
	go func() {
		tick := time.NewTicker(max(limit/4, 10*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			h.mu.Lock()
			silent := h.silence(limit)
			h.mu.Unlock()
			if silent >= limit {
				h.log.Warn("the ranks' guard gave no answer; killing it", "pid", g.Pid(), "silent", silent)
				g.KillProcess()
				return
			}
		}
	}()
	return func() { close(done) }
}

// heard notes a report from the guard, with h.mu held.
func (h *NodeGuard) heard() {
	h.heardAt, h.heardLost = time.Now(), stall.Lost()
}

// silence is how long the guard has not reported, counting only time in
// which this process ran (a starved daemon must not blame its guard), up
// to stall.Stretch times limit of wall time; with h.mu held.
func (h *NodeGuard) silence(limit time.Duration) time.Duration {
	wall := time.Since(h.heardAt)
	if wall >= stall.Stretch*limit {
		return wall
	}
	return wall - (stall.Lost() - h.heardLost)
}
