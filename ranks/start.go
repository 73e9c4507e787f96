package ranks

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"prsh/errmgr"
	"prsh/errmgr/status"
	"prsh/internal/fdlimit"
	"prsh/iof"
	"prsh/job/binding"
	"prsh/ranks/guard"
)

// Start starts the node's ranks in order (Starter): each is handed to the
// node's guard, then their answers are awaited, so that the guard starts
// one while the daemon readies the next. A rank that cannot be bound
// does not start: a silent unbound run is not what the user asked for.
func (n *Node) Start(req Request) []NotStarted {
	if len(req.Ranks) == 0 {
		return nil
	}
	n.openCgroup()
	g, err := n.host.start(req.GuardStopped)
	if err == nil {
		defer n.host.watchAnswers(g, req.GuardStopped)()
	}
	bound, bindErr := bindRanks(req.Bind, len(req.Ranks))
	if err == nil {
		err = bindErr
	}
	failed := make([]*NotStarted, len(req.Ranks))
	handed := make([]*handed, len(req.Ranks))
	cpus := usableCPUs()
	req.gtids = gtids(req.Ranks)
	found := lookups{}
	for local, r := range req.Ranks {
		if err == nil {
			handed[local], failed[local] = n.hand(g, req, local, bound[local], cpus, found)
		} else {
			failed[local] = &NotStarted{Rank: r.ID, Status: status.ExecStatus(err), Err: fdlimit.Explain(err, req.Daemon).Error()}
		}
	}
	var notStarted []NotStarted
	for local := range req.Ranks {
		if handed[local] != nil {
			failed[local] = n.settle(req, handed[local])
		}
		if failed[local] != nil {
			notStarted = append(notStarted, *failed[local])
		}
	}
	return notStarted
}

// handed is a rank handed to the guard, with the daemon's ends of its
// pipes.
type handed struct {
	r   *rank
	out *pipes
}

// hand finds the rank's program, has the daemon attach it, and asks the
// guard to start it, in its own session and process group (so that a
// signal reaches what it started too), with its output on pipes read
// until EOF whatever happens to the process. cpus is how many the
// node's ranks may use; found, where the start's programs were found.
func (n *Node) hand(g *guard.Guard, req Request, local int, bound binding.Binding, cpus int, found lookups) (*handed, *NotStarted) {
	id := req.Ranks[local].ID
	notStarted := func(err error) *NotStarted {
		return &NotStarted{Rank: id, Status: status.ExecStatus(err), Err: fdlimit.Explain(err, req.Daemon).Error()}
	}
	cmd, err := req.Ranks[local].Program.command(found)
	if err != nil {
		return nil, notStarted(err)
	}
	att, err := req.Attach(id)
	if err != nil {
		return nil, notStarted(err)
	}
	defer closeAll(att.Files...) // the guard has its copies
	out, err := newPipes(req.MergeStderr, req.Ranks[local].Stdin)
	if err != nil {
		call(att.Failed)
		return nil, notStarted(fmt.Errorf("cannot run %s: %w", cmd.Args[0], err))
	}
	if req.Bind.Report {
		err = out.report(bindingLine(req.Node, id, bound))
	}
	var r *rank
	if err == nil {
		r = n.track(g, id, att)
		n.handed = true
		err = g.StartRank(guard.RankStart{Job: n.job, Cgroup: n.cgroupDir(), Rank: id, Path: cmd.Path, Args: cmd.Args, Dir: cmd.Dir, CPUs: bound.CPUs,
			Env:   slices.Concat(req.slurmTaskEnv(cmd.Env, local), req.rankEnv(local), req.crowdingEnv(cmd.Env, cpus), att.Env),
			Stdin: out.childIn, Stdout: out.childOut, Stderr: out.childStderr(), Files: att.Files})
	}
	out.closeChildEnds()
	if err != nil && r != nil && n.answeredByListener(g, err) {
		return &handed{r: r, out: out}, nil
	}
	if err != nil {
		if r != nil {
			n.forget(r)
		}
		out.closeOurs()
		call(att.Failed)
		if errors.Is(err, guard.ErrGone) {
			// The guard ended before it read the start, and its listener
			// has seen to its ranks already: its end says why, as for
			// the ranks it did read.
			return nil, &NotStarted{Rank: id, Status: errmgr.StatusFailed, Err: guardEndedWhy(g, g.Ended())}
		}
		return nil, notStarted(fmt.Errorf("cannot run %s: %w", cmd.Args[0], err))
	}
	return &handed{r: r, out: out}, nil
}

// answeredByListener says whether a rank whose start could not be sent,
// the guard having ended, will be answered by the guard's listener, with
// how the guard ended and what it said, rather than with the broken
// socket: so unless the listener has already seen to the guard's ranks.
func (n *Node) answeredByListener(g *guard.Guard, err error) bool {
	return errors.Is(err, guard.ErrGone) && n.host.current() == g
}

// track notes a rank about to be handed to the guard, whose reports on
// it may come at once.
func (n *Node) track(g *guard.Guard, id int, att Attachment) *rank {
	r := &rank{id: id, guard: g, att: att, answer: make(chan guard.Report, 1), settled: make(chan struct{}), openPipes: 2}
	n.mu.Lock()
	if oom, counted := n.oomCountBefore(); counted {
		r.oom = oom
	}
	n.ranks[id] = r
	n.mu.Unlock()
	return r
}

func (n *Node) forget(r *rank) {
	n.mu.Lock()
	delete(n.ranks, r.id)
	n.mu.Unlock()
}

// settle awaits the guard's answer to a rank's start: a rank that runs
// is watched, and the daemon's hook says so; one that did not start is
// returned.
func (n *Node) settle(req Request, h *handed) *NotStarted {
	defer close(h.r.settled)
	answer := <-h.r.answer // the guard's, or the listener's when the guard ended
	if answer.Kind != guard.Running {
		n.forget(h.r)
		h.out.closeOurs()
		call(h.r.att.Failed)
		return &NotStarted{Rank: h.r.id, Status: answer.Status, Err: answer.Err}
	}
	n.watch(req, h.r, h.out)
	call(h.r.att.Started)
	return nil
}

// watch reads the started rank's output and hands its stdin to the
// daemon.
func (n *Node) watch(req Request, r *rank, out *pipes) {
	if out.stdin != nil {
		req.Input.AddRank(r.id, out.stdin)
	}
	n.pump(req.Output, r, iof.Stdout, out.stdout)
	n.pump(req.Output, r, iof.Stderr, out.stderr)
}

// pump reads a rank's output pipe on the node's pumps, or on a goroutine
// of its own where they cannot take it.
func (n *Node) pump(sink iof.Sink, r *rank, stream iof.Stream, pipe *os.File) {
	done := func(err error) {
		if err != nil {
			n.log.Debug("output lost", "rank", r.id, "error", err)
		}
		pipe.Close()
		n.pipeClosed(r)
	}
	if err := n.host.pumps.Add(sink, r.id, stream, pipe, done); err != nil {
		n.log.Debug("output read on a goroutine of its own", "rank", r.id, "error", err)
		go func() { done(iof.Pump(sink, r.id, stream, pipe)) }()
	}
}

// pipes are a rank's stdio: the child's ends, and the daemon's.
type pipes struct {
	childIn, childOut, childErr *os.File // childIn nil: /dev/null
	stdout, stderr, stdin       *os.File // stdin nil: not for this rank
	merged                      bool     // the child's stderr goes to its stdout
}

// newPipes makes a rank's output pipes, and a stdin pipe when mpirun's
// stdin is for it.
func newPipes(merged, stdin bool) (*pipes, error) {
	p := &pipes{merged: merged}
	var err error
	if p.stdout, p.childOut, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.stderr, p.childErr, err = os.Pipe(); err == nil && stdin {
		p.childIn, p.stdin, err = os.Pipe()
	}
	if err != nil {
		p.closeChildEnds()
		p.closeOurs()
		return nil, err
	}
	return p, nil
}

// childStderr is where the child's stderr goes.
func (p *pipes) childStderr() *os.File {
	if p.merged {
		return p.childOut
	}
	return p.childErr
}

// report writes a line of ours where the rank's stderr goes.
func (p *pipes) report(line string) error {
	_, err := io.WriteString(p.childStderr(), line)
	return err
}

func (p *pipes) closeChildEnds() { closeAll(p.childIn, p.childOut, p.childErr) }

func (p *pipes) closeOurs() { closeAll(p.stdout, p.stderr, p.stdin) }

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
