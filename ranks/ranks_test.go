package ranks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/iof"
	"prsh/job/binding"
	"prsh/ranks/guard"
)

// The test binary is the ranks' guard, as orted is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == guard.GuardArg {
		guard.RunGuard(os.Args[2:])
	}
	os.Exit(m.Run())
}

// daemon is the fake daemon around a Node: it keeps what the ranks wrote,
// the events reported, the stdin pipes handed over and the hooks called.
type daemon struct {
	node   *Node
	events chan Event

	mu     sync.Mutex
	output map[iof.Stream]map[int]string // by stream, by rank
	hooks  []string                      // "started 0", "ended 0 with 3", "exited 0"...: hooks called, exits reported
	stdin  map[int]*os.File
}

func newDaemon(t *testing.T) *daemon {
	host := NewNodeGuard(hclog.NewNullLogger())
	t.Cleanup(host.Close)
	return newJob(t, host)
}

// newJob is the fake daemon of one job on host's guard.
func newJob(t *testing.T, host *NodeGuard) *daemon {
	d := &daemon{events: make(chan Event, 16), stdin: map[int]*os.File{},
		output: map[iof.Stream]map[int]string{iof.Stdout: {}, iof.Stderr: {}}}
	d.node = host.Job(hclog.NewNullLogger(), func(ev Event) {
		if e, ok := ev.(Exited); ok {
			d.hook(fmt.Sprint("exited ", e.Rank))()
		}
		d.events <- ev
	})
	t.Cleanup(func() {
		d.node.Signal(syscall.SIGKILL)
		d.node.Close()
	})
	return d
}

func (d *daemon) Send(c iof.Chunk) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.output[c.Stream][c.Rank] += string(c.Data)
	return nil
}

func (d *daemon) AddRank(rank int, pipe *os.File) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stdin[rank] = pipe
}

func (d *daemon) hook(what string) func() {
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.hooks = append(d.hooks, what)
	}
}

// request runs each script with sh -c, one rank each from 0, with an
// attachment that passes env and records the hooks.
func (d *daemon) request(env []string, scripts ...string) Request {
	req := Request{Node: "n1", NodeID: 4, Size: 10, Output: d, Input: d, GuardStopped: time.Minute}
	for id, script := range scripts {
		prog := Program{Argv: []string{"sh", "-c", script}, Dir: "/", Env: []string{"PATH=" + os.Getenv("PATH")}}
		req.Ranks = append(req.Ranks, Rank{ID: id, Program: prog})
	}
	req.Attach = func(rank int) (Attachment, error) {
		n := fmt.Sprint(rank)
		return Attachment{Env: env, Started: d.hook("started " + n), Failed: d.hook("failed " + n), Ended: func(status int) { d.hook(fmt.Sprintf("ended %s with %d", n, status))() }}, nil
	}
	return req
}

// next is the next event reported.
func (d *daemon) next(t *testing.T) Event {
	t.Helper()
	select {
	case ev := <-d.events:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event in 30 s")
		return nil
	}
}

// ended waits until ranks ranks have exited and been drained, and
// returns how each exited.
func (d *daemon) ended(t *testing.T, ranks int) map[int]Exited {
	t.Helper()
	exits, drained := map[int]Exited{}, map[int]bool{}
	for len(exits) < ranks || len(drained) < ranks {
		switch e := d.next(t).(type) {
		case Exited:
			exits[e.Rank] = e
		case Drained:
			drained[e.Rank] = true
		}
	}
	return exits
}

func (d *daemon) outputOf(rank int, stream iof.Stream) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.output[stream][rank]
}

// TestStartReportsTheExit: a rank's output reaches the sink, its
// environment says who it is with the attachment's variables last, its
// exit status is exact, and the daemon's hook on its end runs before the
// end is reported.
func TestStartReportsTheExit(t *testing.T) {
	d := newDaemon(t)
	req := d.request([]string{"PMI_RANK=0", "PRSH_NODE=overridden"},
		`echo "$PRSH_RANK/$PRSH_SIZE $PRSH_LOCAL_RANK/$PRSH_LOCAL_SIZE $PRSH_NODE_ID $OMPI_APPNUM $PMI_RANK $PRSH_NODE"; echo oops >&2; exit 3`)
	req.Ranks[0].AppNum = 2
	if failed := d.node.Start(req); len(failed) != 0 {
		t.Fatal(failed)
	}
	exit := d.ended(t, 1)[0]
	if exit.Status != 3 || exit.How != "exited with status 3" {
		t.Errorf("exit %+v", exit)
	}
	if got, want := d.outputOf(0, iof.Stdout), "0/10 0/1 4 2 0 overridden\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got := d.outputOf(0, iof.Stderr); got != "oops\n" {
		t.Errorf("stderr %q, want \"oops\\n\"", got)
	}
	if strings.Join(d.hooks, ", ") != "started 0, ended 0 with 3, exited 0" {
		t.Errorf("hooks %q", d.hooks)
	}
	if d.node.Live(0) {
		t.Error("an exited rank is live")
	}
}

// TestSignalReachesTheGroup: a signal to the ranks reaches what a rank
// started in its group, and the rank's status says the signal.
func TestSignalReachesTheGroup(t *testing.T) {
	d := newDaemon(t)
	dir := t.TempDir()
	mark, runs := filepath.Join(dir, "pid"), filepath.Join(dir, "runs")
	d.node.Start(d.request(nil, `sleep 60 & echo $! > `+mark+`; wait`, `echo $$ > `+runs+`; exec sleep 60`))
	child := waitPid(t, mark)
	waitPid(t, runs)
	if !d.node.Live(0) || !d.node.Live(1) || d.node.Live(2) {
		t.Fatal("the running ranks are not live, or an unknown one is")
	}
	d.node.Signal(syscall.SIGTERM)
	for rank, e := range d.ended(t, 2) {
		if e.Status != 143 || e.How != "was killed by signal 15 (SIGTERM)" {
			t.Errorf("rank %d: %+v", rank, e)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(child, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rank's child survived the signal to its group")
		}
	}
}

// TestStdinToOneRank: the rank whose Stdin is set reads what the daemon
// writes to its pipe; the others read nothing.
func TestStdinToOneRank(t *testing.T) {
	d := newDaemon(t)
	req := d.request(nil, "cat", "cat")
	req.Ranks[1].Stdin = true
	d.node.Start(req)
	pipe := d.stdin[1]
	if len(d.stdin) != 1 || pipe == nil {
		t.Fatalf("stdin pipes %v, want rank 1's alone", d.stdin)
	}
	pipe.WriteString("to rank 1\n")
	pipe.Close()
	exits := d.ended(t, 2)
	for rank, want := range []string{"", "to rank 1\n"} {
		if e, got := exits[rank], d.outputOf(rank, iof.Stdout); e.Status != 0 || got != want {
			t.Errorf("rank %d: %+v, read %q, want %q", rank, e, got, want)
		}
	}
}

// TestBindingApplied: a bound rank runs on its CPUs from its start, and
// --report-bindings says where on its stderr.
func TestBindingApplied(t *testing.T) {
	d := newDaemon(t)
	req := d.request(nil, `grep Cpus_allowed_list /proc/self/status`)
	req.Bind = binding.Policy{Unit: binding.HWThread, Report: true}
	want, err := bindRanks(req.Bind, 1)
	if err != nil {
		t.Fatal(err)
	}
	d.node.Start(req)
	d.ended(t, 1)
	line := "mpirun: n1: rank 0 bound to " + want[0].String() + "\n"
	allowed := "Cpus_allowed_list:\t" + binding.List(want[0].CPUs) + "\n"
	if got := d.outputOf(0, iof.Stderr); got != line {
		t.Errorf("stderr %q, want %q", got, line)
	}
	if got := d.outputOf(0, iof.Stdout); got != allowed {
		t.Errorf("stdout %q, want %q", got, allowed)
	}
}

// TestNotStarted: a program that does not exist, a working directory
// asked for that does not exist, and a rank the daemon cannot attach do
// not start, with the shell's status; the ranks after them still do.
func TestNotStarted(t *testing.T) {
	d := newDaemon(t)
	req := d.request(nil, "", "", "", "exit 0")
	req.Ranks[0].Program.Argv = []string{"no-such-program-xyz"}
	req.Ranks[1].Program.Dir, req.Ranks[1].Program.DirSet = "/no/such/dir", true
	attach := req.Attach
	req.Attach = func(rank int) (Attachment, error) {
		if rank == 2 {
			return Attachment{}, os.ErrPermission
		}
		return attach(rank)
	}
	failed := d.node.Start(req)
	want := []NotStarted{
		{Rank: 0, Status: 127, Err: "cannot run no-such-program-xyz: executable file not found in $PATH"},
		{Rank: 1, Status: 255, Err: "working directory /no/such/dir does not exist"},
		{Rank: 2, Status: 126, Err: "permission denied"},
	}
	if len(failed) != len(want) {
		t.Fatalf("not started %+v, want %+v", failed, want)
	}
	for i := range want {
		if failed[i] != want[i] {
			t.Errorf("not started %+v, want %+v", failed[i], want[i])
		}
	}
	if e := d.ended(t, 1)[3]; e.Status != 0 {
		t.Errorf("the rank after them: %+v", e)
	}
	if d.node.Live(0) {
		t.Error("a rank that did not start is live")
	}
}

// TestSilentGuardKilled: a guard that stops answering (stopped by hand)
// holds no start for ever: silent for the guard-stopped bound, it is
// killed, the rank waiting fails naming it, and the rank it ran ends.
func TestSilentGuardKilled(t *testing.T) {
	d := newDaemon(t)
	if failed := d.node.Start(d.request(nil, "exec sleep 60")); len(failed) != 0 {
		t.Fatal(failed)
	}
	syscall.Kill(d.node.host.current().Pid(), syscall.SIGSTOP)
	req := d.request(nil, "", "exit 0")
	req.Ranks = req.Ranks[1:]
	req.GuardStopped = 300 * time.Millisecond
	failed := d.node.Start(req)
	if len(failed) != 1 || failed[0].Rank != 1 || !strings.HasPrefix(failed[0].Err, "the ranks' guard was killed by signal") {
		t.Fatalf("not started %+v, want rank 1 failed by the guard's kill", failed)
	}
	if e := d.ended(t, 1)[0]; e.Status == 0 {
		t.Errorf("the running rank of the killed guard: %+v", e)
	}
}

// TestSignalGroupForgetsEmptyGroups: a reaped rank's process group is
// signalled while something it left behind lives in it, and never again
// once it is empty, since its number may then go to a stranger's group.
func TestSignalGroupForgetsEmptyGroups(t *testing.T) {
	start := func(script string) *rank {
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		return &rank{pid: cmd.Process.Pid, reaped: true}
	}

	alone := start("exit 0")
	alone.signalGroup(0)
	if !alone.groupGone {
		t.Fatal("the group of a rank that left nothing behind is not marked gone")
	}

	left := start("sleep 60 & exit 0") // the sleep stays in the group
	left.signalGroup(0)
	if left.groupGone {
		t.Fatal("a group with a leftover in it is marked gone")
	}
	left.signalGroup(syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); !left.groupGone; left.signalGroup(0) {
		if time.Now().After(deadline) {
			t.Fatal("the leftover survived SIGKILL to its group")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitPid polls until file holds a pid.
func waitPid(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var pid int
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			if _, err := fmt.Sscan(string(b), &pid); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// TestGoroutinesNotPerRank: running ranks cost the node a few goroutines
// in all, not some per rank (their output pipes are read by one loop).
func TestGoroutinesNotPerRank(t *testing.T) {
	const ranks, bound = 64, 16
	d := newDaemon(t)
	d.events = make(chan Event, 2*ranks)
	before := runtime.NumGoroutine()
	scripts := make([]string, ranks)
	for i := range scripts {
		scripts[i] = "exec sleep 60"
	}
	if failed := d.node.Start(d.request(nil, scripts...)); len(failed) != 0 {
		t.Fatal(failed)
	}
	if grown := runtime.NumGoroutine() - before; grown > bound {
		t.Errorf("%d more goroutines with %d ranks running, want at most %d", grown, ranks, bound)
	}
	d.node.Signal(syscall.SIGKILL)
	d.ended(t, ranks)
}

// TestJobsShareTheGuard: two jobs' Starters run at once on one node's
// guard, each hearing its own rank 0; killing one job ends its rank and
// what that rank started, alone, under the same guard, and the other
// job's rank runs on to its own end.
func TestJobsShareTheGuard(t *testing.T) {
	host := NewNodeGuard(hclog.NewNullLogger())
	t.Cleanup(host.Close)
	one, two := newJob(t, host), newJob(t, host)
	dir := t.TempDir()
	mark, goOn := filepath.Join(dir, "escapee"), filepath.Join(dir, "go")
	one.node.Start(one.request(nil, `( setsid sh -c 'echo $$ > `+mark+`.tmp; mv `+mark+`.tmp `+mark+`; exec sleep 60' >/dev/null 2>&1 & ); exec sleep 60`))
	two.node.Start(two.request(nil, `while [ ! -e `+goOn+` ]; do sleep 0.01; done; exit 5`))
	escapee := waitPid(t, mark)
	guardPid := host.current().Pid()
	one.node.Signal(syscall.SIGKILL)
	if e := one.ended(t, 1)[0]; e.Status != 137 {
		t.Errorf("the killed job's rank: %+v, want 137", e)
	}
	one.node.Close()
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(escapee, 0) == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed job's escapee outlived its job")
		}
	}
	if !two.node.Live(0) {
		t.Fatal("the other job's rank went with the killed job")
	}
	os.WriteFile(goOn, nil, 0o644)
	if e := two.ended(t, 1)[0]; e.Status != 5 {
		t.Errorf("the other job's rank: %+v, want its own exit 5", e)
	}
	if g := host.current(); g == nil || g.Pid() != guardPid {
		t.Error("the node's guard did not outlive the job it killed")
	}
}
