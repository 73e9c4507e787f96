package ranks

import (
	"fmt"
	"io"
	"os"
	"os/exec"

	"prsh/errmgr/status"
	"prsh/internal/fdlimit"
	"prsh/iof"
	"prsh/job/binding"
	"prsh/ranks/guard"
)

// Start starts the node's ranks in order (Starter). A rank that cannot be
// bound does not start: a silent unbound run is not what the user asked
// for.
func (n *Node) Start(req Request) []NotStarted {
	if len(req.Ranks) > 0 {
		n.openCgroup()
	}
	bound, bindErr := bindRanks(req.Bind, len(req.Ranks))
	var failed []NotStarted
	for local, r := range req.Ranks {
		err := bindErr
		if err == nil {
			err = n.startRank(req, local, bound[local])
		}
		if err != nil {
			failed = append(failed, NotStarted{Rank: r.ID, Status: status.ExecStatus(err), Err: fdlimit.Explain(err, req.Daemon).Error()})
		}
	}
	return failed
}

// startRank finds the rank's program, has the daemon attach it, and
// starts it under its guard.
func (n *Node) startRank(req Request, local int, bound binding.Binding) error {
	r := req.Ranks[local]
	cmd, err := r.Program.command()
	if err != nil {
		return err
	}
	att, err := req.Attach(r.ID)
	if err != nil {
		return err
	}
	cmd.ExtraFiles = att.Files
	cmd.Env = append(append(req.slurmTaskEnv(cmd.Env, local), req.rankEnv(local)...), att.Env...)
	err = n.startGuarded(req, local, bound, cmd, att)
	for _, f := range att.Files {
		f.Close() // the rank has its copies
	}
	if err != nil {
		call(att.Failed)
		return err
	}
	call(att.Started)
	return nil
}

// startGuarded starts the rank's command under a guard, in its own process
// group (so that a signal reaches what it started too), in the job's
// cgroup where there is one, with its output on pipes read until EOF
// whatever happens to the process.
func (n *Node) startGuarded(req Request, local int, bound binding.Binding, cmd *exec.Cmd, att Attachment) error {
	g, err := guard.GuardCommand(cmd, req.GuardStopped)
	if err != nil {
		return err
	}
	if n.cgroup != nil {
		n.cgroup.Place(g.Cmd)
	}
	out, err := newPipes(req.MergeStderr, req.Ranks[local].Stdin)
	if err != nil {
		g.Close()
		return fmt.Errorf("cannot run %s: %w", cmd.Args[0], err)
	}
	out.attach(g.Cmd)
	id := req.Ranks[local].ID
	if req.Bind.Report {
		err = out.report(bindingLine(req.Node, id, bound))
	}
	oom, counted := n.oomCountBefore()
	if err == nil {
		g.BindTo(bound.CPUs)
		err = g.Start()
	} else {
		g.Close()
	}
	out.closeChildEnds()
	if err != nil {
		out.closeOurs()
		return fmt.Errorf("cannot run %s: %w", cmd.Args[0], err)
	}
	n.checkCgroup(g)
	r := &rank{id: id, guard: g, openPipes: 2}
	if counted && n.cgroup != nil && g.OutsideCgroup == nil {
		r.oom = oom
	}
	n.watch(req, r, out, att)
	return nil
}

// watch reads the started rank's output, hands its stdin to the daemon,
// and reports its end.
func (n *Node) watch(req Request, r *rank, out *pipes, att Attachment) {
	n.mu.Lock()
	n.ranks[r.id] = r
	n.mu.Unlock()
	if out.stdin != nil {
		req.Input.AddRank(r.id, out.stdin)
	}
	n.pump(req.Output, r, iof.Stdout, out.stdout)
	n.pump(req.Output, r, iof.Stderr, out.stderr)
	go func() {
		ws := r.guard.Wait()
		call(att.Ended)
		n.reaped(r)
		n.report(Exited{Rank: r.id, Status: status.ExitStatus(ws), How: n.describe(r, ws)})
		r.guard.Reap() // once what the rank left behind is gone
	}()
}

func (n *Node) pump(sink iof.Sink, r *rank, stream iof.Stream, pipe *os.File) {
	go func() {
		if err := iof.Pump(sink, r.id, stream, pipe); err != nil {
			n.log.Debug("output lost", "rank", r.id, "error", err)
		}
		pipe.Close()
		n.pipeClosed(r)
	}()
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

// attach gives cmd the child's ends.
func (p *pipes) attach(cmd *exec.Cmd) {
	cmd.Stdout, cmd.Stderr = p.childOut, p.childErr
	if p.merged {
		cmd.Stderr = p.childOut
	}
	if p.childIn != nil {
		cmd.Stdin = p.childIn
	}
}

// report writes a line of ours where the rank's stderr goes.
func (p *pipes) report(line string) error {
	w := p.childErr
	if p.merged {
		w = p.childOut
	}
	_, err := io.WriteString(w, line)
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
