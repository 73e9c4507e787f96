package ranks

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/iof"
)

// TestOOMKillNamed: a rank killed by SIGKILL is the OOM killer's only
// when the job cgroup counted an OOM kill during its life that no other
// rank's end was put down to, or, where nothing counts them, when the
// kernel's log has the OOM killer's kill of its pid and the node's
// teardown did not kill it; otherwise it is a signal like any other.
func TestOOMKillNamed(t *testing.T) {
	const oom = "was killed by the kernel's OOM killer (out of memory; signal 9)"
	const kill = "was killed by signal 9 (SIGKILL)"
	kills := 3
	count := func() (int, error) { return kills, nil }
	n := NewNodeGuard(hclog.NewNullLogger()).Job(hclog.NewNullLogger(), func(Event) {})
	const loggedPid = 7 // the kernel's log has the OOM kill of this pid only
	n.kernelLoggedOOMKill = func(pid int) bool { return pid == loggedPid }
	first := &rank{oom: oomCount{kills: count, before: 3}}
	second := &rank{oom: oomCount{kills: count, before: 3}}
	later := &rank{oom: oomCount{kills: count, before: 4}}
	uncounted := &rank{}
	broken := &rank{oom: oomCount{kills: func() (int, error) { return 0, errors.New("gone") }}}
	logged := &rank{pid: loggedPid}
	loggedButTornDown := &rank{pid: loggedPid, oom: oomCount{killedByNode: true}}
	loggedButCounted := &rank{pid: loggedPid, oom: oomCount{kills: count, before: 6}}
	brokenLogged := &rank{pid: loggedPid, oom: oomCount{kills: func() (int, error) { return 0, errors.New("gone") }}}
	killed, segv := waitStatus(t, "KILL"), waitStatus(t, "SEGV")
	steps := []struct {
		name  string
		r     *rank
		ws    syscall.WaitStatus
		kills int
		want  string
	}{
		{"no OOM kill counted", first, killed, 3, kill},
		{"an OOM kill counted, but a SIGSEGV", first, segv, 4, "was killed by signal 11 (SIGSEGV)"},
		{"an OOM kill during its life", first, killed, 4, oom},
		{"that kill explained already", second, killed, 4, kill},
		{"a kill before its start", later, killed, 4, kill},
		{"one more kill", second, killed, 5, oom},
		{"no job cgroup", uncounted, killed, 6, kill},
		{"the count unreadable", broken, killed, 6, kill},
		{"no job cgroup, an OOM kill of its pid logged", logged, killed, 6, oom},
		{"logged, but a SIGSEGV", logged, segv, 6, "was killed by signal 11 (SIGSEGV)"},
		{"logged, but the node's teardown killed it", loggedButTornDown, killed, 6, kill},
		{"logged, but the job cgroup counted no kill", loggedButCounted, killed, 6, kill},
		{"the count unreadable, an OOM kill logged", brokenLogged, killed, 6, oom},
	}
	for _, s := range steps {
		kills = s.kills
		if got := n.describe(s.r, s.ws); got != s.want {
			t.Errorf("%s: %q, want %q", s.name, got, s.want)
		}
	}
}

// waitStatus is how sh ends when it kills itself with sig.
func waitStatus(t *testing.T, sig string) syscall.WaitStatus {
	t.Helper()
	cmd := exec.Command("sh", "-c", "kill -"+sig+" $$")
	cmd.Run()
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// TestTeardownKillIsNotOOM: the node's teardown SIGKILLs a running rank
// while another rank, killed by the OOM killer just before, has not yet
// been reported: the rank reaped first died of the teardown's kill and
// is reported as such; the OOM kill stays for the rank it killed.
func TestTeardownKillIsNotOOM(t *testing.T) {
	d := newDaemon(t)
	req := d.request(nil, "echo up; exec sleep 100", "echo up; exec sleep 100")
	release := make(chan struct{})
	attach := req.Attach
	req.Attach = func(rank int) (Attachment, error) {
		att, err := attach(rank)
		if rank == 0 { // its report waits until the teardown's is in
			att.Ended = func(int) { <-release }
		}
		return att, err
	}
	if failed := d.node.Start(req); len(failed) != 0 {
		t.Fatal(failed)
	}
	d.waitOutput(t, "up\n", 2)
	var mu sync.Mutex
	kills := 0
	count := func() (int, error) { mu.Lock(); defer mu.Unlock(); return kills, nil }
	d.node.mu.Lock()
	victim := d.node.ranks[0].pid
	for _, r := range d.node.ranks {
		r.oom = oomCount{kills: count}
	}
	d.node.mu.Unlock()

	syscall.Kill(-victim, syscall.SIGKILL) // as the OOM killer would
	for deadline := time.Now().Add(30 * time.Second); !d.exitHeard(0); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("rank 0's end not heard 30 s after its SIGKILL")
		}
	}
	mu.Lock()
	kills = 1
	mu.Unlock()
	d.node.Signal(syscall.SIGKILL)
	teardown := d.nextExit(t)
	close(release)
	oom := d.nextExit(t)
	if want := "was killed by signal 9 (SIGKILL)"; teardown.Rank != 1 || teardown.How != want {
		t.Errorf("first reported: rank %d %q, want rank 1 %q", teardown.Rank, teardown.How, want)
	}
	if want := "was killed by the kernel's OOM killer (out of memory; signal 9)"; oom.Rank != 0 || oom.How != want {
		t.Errorf("then: rank %d %q, want rank 0 %q", oom.Rank, oom.How, want)
	}
}

// TestGuardKillIsNotOOM: a guard SIGKILLed (as the OOM killer might take
// it) ends its ranks with its own status: the node killed them, so
// neither the job cgroup's count nor the kernel's log is asked.
func TestGuardKillIsNotOOM(t *testing.T) {
	d := newDaemon(t)
	var mu sync.Mutex
	asked := 0
	d.node.kernelLoggedOOMKill = func(int) bool { mu.Lock(); defer mu.Unlock(); asked++; return true }
	if failed := d.node.Start(d.request(nil, "echo up; exec sleep 100", "echo up; exec sleep 100")); len(failed) != 0 {
		t.Fatal(failed)
	}
	d.waitOutput(t, "up\n", 2)
	kills := 0
	count := func() (int, error) { mu.Lock(); defer mu.Unlock(); asked++; return kills, nil }
	d.node.mu.Lock()
	for _, r := range d.node.ranks {
		r.oom = oomCount{kills: count}
	}
	guardPid := d.node.host.current().Pid()
	d.node.mu.Unlock()
	mu.Lock()
	kills = 1
	mu.Unlock()

	syscall.Kill(guardPid, syscall.SIGKILL)
	for rank, e := range d.ended(t, 2) {
		if want := "was killed by signal 9 (SIGKILL)"; e.How != want {
			t.Errorf("rank %d %q, want %q", rank, e.How, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 0 {
		t.Errorf("the count or the kernel's log asked %d times about ranks the node killed", asked)
	}
}

// exitHeard says whether the guard reported the rank's end.
func (d *daemon) exitHeard(rank int) bool {
	d.node.mu.Lock()
	defer d.node.mu.Unlock()
	return d.node.ranks[rank].exited
}

// waitOutput waits until each of ranks ranks has written want.
func (d *daemon) waitOutput(t *testing.T, want string, ranks int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		d.mu.Lock()
		n := 0
		for _, out := range d.output[iof.Stdout] {
			if out == want {
				n++
			}
		}
		d.mu.Unlock()
		if n == ranks {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ranks have not all written %q in 30 s", want)
		}
	}
}

// nextExit is the next rank's exit reported.
func (d *daemon) nextExit(t *testing.T) Exited {
	t.Helper()
	for {
		if e, ok := d.next(t).(Exited); ok {
			return e
		}
	}
}
