package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// stderrSettle is how long a task's result waits after srun reported its
// end, for the rest of its stderr: slurmstepd sends a task's output and
// its exit on different connections, and "execve(): …: No such file or
// directory" often comes after the exit.
var stderrSettle = time.Second

// step is one running srun of many tasks, one per host.
type step struct {
	log   hclog.Logger
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tasks []*stepTask // in the order of the hosts
	done  chan struct{}
	own   *tail // srun's own lines

	mu       sync.Mutex
	byHost   map[string]*stepTask
	byTask   map[int]*stepTask // learned from the lines
	stderr   map[int][]string  // each task's stderr lines, the last few
	explains bool              // a task's failure explains srun's status
	// cancelled: Slurm cancelled the step (cancelledRE): its SIGTERM
	// reached every task, whatever their statuses say.
	cancelled bool
	killed    bool
	shutOnce  sync.Once
}

// stepTask is one host's task of a step: its Process.
type stepTask struct {
	s         *step
	host      string
	alive     chan struct{}
	aliveOnce sync.Once
	done      chan struct{}
	endOnce   sync.Once
	err       error
	exit      *ExitError // srun's report, until the stderr settles
	released  bool
}

func startStep(ctx context.Context, cmd *exec.Cmd, hosts []string, payload []byte, log hclog.Logger) (*step, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &step{log: log, cmd: cmd, done: make(chan struct{}), own: newTail(nil, "stderr"),
		byHost: map[string]*stepTask{}, byTask: map[int]*stepTask{}, stderr: map[int][]string{}}
	for _, h := range hosts {
		t := &stepTask{s: s, host: h, alive: make(chan struct{}), done: make(chan struct{})}
		s.tasks = append(s.tasks, t)
		s.byHost[h] = t
	}
	if len(hosts) == 1 { // an orted of its own argv, whose alive line names no node
		s.byTask[0] = s.tasks[0]
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	s.stdin = stdin
	cmd.Stdout, cmd.Stderr = &lines{each: s.stdoutLine}, &lines{each: s.stderrLine}
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, err
	}
	log.Debug("started", "pid", cmd.Process.Pid, "argv", cmd.Args)
	go s.reap()
	return s, s.feed(ctx, payload)
}

// feed writes the payload (the secret and the hosts table) to every
// task, bounded by ctx; srun's own last words are the error when it
// ended before.
func (s *step) feed(ctx context.Context, payload []byte) error {
	if len(payload) == 0 { // a write of nothing could only fail on srun's early end, which Wait tells
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.stdin.Write(payload)
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil {
			return nil
		}
		s.shutdown(true)
		if werr := s.tasks[0].Wait(); werr != nil {
			return werr
		}
		return fmt.Errorf("write stdin: %w", err)
	case <-ctx.Done():
		s.shutdown(true)
		<-errc
		return ctx.Err()
	}
}

// reap waits for srun and ends every task that has no result yet: with
// srun's report if it made one, else exit 0 when srun's status is
// explained by a task's failure, else srun's own failure.
func (s *step) reap() {
	err := exitError(s.cmd.Wait(), s.own.String())
	close(s.done)
	s.mu.Lock()
	explains := s.explains
	reported := make([]*ExitError, len(s.tasks))
	for i, t := range s.tasks {
		reported[i] = t.exit
	}
	s.mu.Unlock()
	for i, t := range s.tasks {
		switch {
		case reported[i] != nil:
			t.end(reported[i])
		case err == nil || explains:
			t.end(nil)
		default:
			t.end(s.srunFailure(err))
		}
	}
}

// srunFailure is srun's own failure in one line, for a task with no
// report of its own.
func (s *step) srunFailure(err error) error {
	var xe *ExitError
	if !errors.As(err, &xe) {
		return err
	}
	short := *xe
	short.Stderr = stepStderr(strings.Split(xe.Stderr, "\n"))
	if short.Stderr == "" && short.Signal != "" {
		short.Stderr = "it went to srun, which runs the daemons' job step"
	}
	return &short
}

func (s *step) stdoutLine(line string) {
	task, text, ok := labelled(line)
	if !ok {
		s.log.Debug("srun stdout", "line", line)
		return
	}
	s.mu.Lock()
	if host, ok := aliveHost(text); ok && s.byHost[host] != nil {
		s.byTask[task] = s.byHost[host]
	}
	t := s.byTask[task]
	s.mu.Unlock()
	s.log.Debug("task stdout", "task", task, "line", text)
	if t != nil {
		t.aliveOnce.Do(func() { close(t.alive) })
	}
}

func (s *step) stderrLine(line string) {
	s.log.Debug("srun stderr", "line", line)
	if cancelledRE().MatchString(line) {
		s.mu.Lock()
		s.cancelled = true
		s.mu.Unlock()
	}
	if task, text, ok := labelled(line); ok {
		s.mu.Lock()
		s.stderr[task] = append(lastLines(s.stderr[task], 20), text)
		s.mu.Unlock()
		return
	}
	x, ok := parseTaskExit(line)
	if !ok {
		s.own.Write([]byte(line + "\n"))
		return
	}
	s.mu.Lock()
	s.explains = true
	if len(x.tasks) == 1 && s.byHost[x.node] != nil {
		s.byTask[x.tasks[0]] = s.byHost[x.node]
	}
	for _, task := range x.tasks {
		if t := s.byTask[task]; t != nil && t.exit == nil {
			t.exit = x.status
			time.AfterFunc(stderrSettle, func() { t.end(x.status) })
		}
	}
	s.mu.Unlock()
}

// end gives task t its result once, with its stderr for a failure.
func (t *stepTask) end(err error) {
	t.endOnce.Do(func() {
		var xe *ExitError
		if errors.As(err, &xe) && xe.Stderr == "" {
			full := *xe
			full.Stderr = t.s.taskStderr(t)
			err = &full
		}
		t.err = err
		close(t.done)
		t.s.maybeShutdown()
	})
}

// taskStderr is task t's stderr in one line.
func (s *step) taskStderr(t *stepTask) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for task, owner := range s.byTask {
		if owner == t {
			return stepStderr(s.stderr[task])
		}
	}
	return ""
}

// Wait implements Process.
func (t *stepTask) Wait() error {
	<-t.done
	return t.err
}

// Cancelled implements Cancellable: what Wait returned is known
// first, as srun's end or its report of the task comes after
// slurmstepd's line.
func (t *stepTask) Cancelled() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.cancelled
}

// Alive implements Process.
func (t *stepTask) Alive() <-chan struct{} { return t.alive }

// Close implements Process: see SrunStep.
func (t *stepTask) Close() error { return t.release(false) }

// Kill implements Process: see SrunStep.
func (t *stepTask) Kill() error { return t.release(true) }

func (t *stepTask) release(kill bool) error {
	s := t.s
	s.mu.Lock()
	t.released = true
	s.killed = s.killed || kill
	s.mu.Unlock()
	s.maybeShutdown()
	<-t.done
	return nil
}

// maybeShutdown ends srun once every task is released or ended.
func (s *step) maybeShutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		select {
		case <-t.done:
		default:
			if !t.released {
				return
			}
		}
	}
	go s.shutdown(s.killed)
}

// shutdown closes srun's stdin (every task's lifeline), gives srun
// Close's grace unless kill, then kills it: srun's end ends its step.
func (s *step) shutdown(kill bool) {
	s.shutOnce.Do(func() {
		s.stdin.Close()
		if !kill {
			t := time.NewTimer(closeGrace)
			defer t.Stop()
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
		killProcess(s.cmd.Process, s.log)
	})
}

// lines calls each with every whole line written to it.
type lines struct {
	partial []byte
	each    func(string)
}

func (l *lines) Write(b []byte) (int, error) {
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			if len(l.partial) > maxLogLine {
				l.partial = l.partial[:0] // a line too long to be ours
			}
			return len(b), nil
		}
		l.each(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

// lastLines keeps the last n-1 of ls, to add one.
func lastLines(ls []string, n int) []string {
	if len(ls) >= n {
		return ls[len(ls)-n+1:]
	}
	return ls
}
