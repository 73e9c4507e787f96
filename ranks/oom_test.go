package ranks

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestOOMKillNamed: a rank killed by SIGKILL is the OOM killer's only
// when the job cgroup counted an OOM kill during its life that no other
// rank's end was put down to; otherwise it is a signal like any other.
func TestOOMKillNamed(t *testing.T) {
	const oom = "was killed by the kernel's OOM killer (out of memory; signal 9)"
	const kill = "was killed by signal 9 (SIGKILL)"
	kills := 3
	count := func() (int, error) { return kills, nil }
	n := NewNode(hclog.NewNullLogger(), func(Event) {})
	first := &rank{oom: oomCount{kills: count, before: 3}}
	second := &rank{oom: oomCount{kills: count, before: 3}}
	later := &rank{oom: oomCount{kills: count, before: 4}}
	uncounted := &rank{}
	broken := &rank{oom: oomCount{kills: func() (int, error) { return 0, errors.New("gone") }}}
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
