package status

import (
	"os/exec"
	"syscall"
	"testing"
)

func TestExitStatusAndDescribe(t *testing.T) {
	cases := []struct {
		script string
		status int
		says   string
	}{
		{"exit 0", 0, "exited with status 0"},
		{"exit 3", 3, "exited with status 3"},
		{"kill -SEGV $$", 139, "was killed by signal 11 (SIGSEGV)"},
		{"kill -KILL $$", 137, "was killed by signal 9 (SIGKILL)"},
	}
	for _, tc := range cases {
		cmd := exec.Command("sh", "-c", tc.script)
		cmd.Run()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if got := ExitStatus(ws); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.script, got, tc.status)
		}
		if got := Describe(ws); got != tc.says {
			t.Errorf("%s: %q, want %q", tc.script, got, tc.says)
		}
	}
}

// TestDescribeOOMKill: the OOM killer's kill keeps its status (137) and
// says so.
func TestDescribeOOMKill(t *testing.T) {
	cmd := exec.Command("sh", "-c", "kill -KILL $$")
	cmd.Run()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	want := "was killed by the kernel's OOM killer (out of memory; signal 9)"
	if got := DescribeOOMKill(ws); got != want || ExitStatus(ws) != 137 {
		t.Errorf("%q, status %d; want %q, 137", got, ExitStatus(ws), want)
	}
}

func TestExecStatus(t *testing.T) {
	_, notFound := exec.LookPath("no-such-program-xyz")
	if got := ExecStatus(notFound); got != 127 {
		t.Errorf("not found: %d, want 127", got)
	}
	if got := ExecStatus(syscall.EACCES); got != 126 {
		t.Errorf("permission denied: %d, want 126", got)
	}
	if got := UnwrapExec(notFound).Error(); got != "executable file not found in $PATH" {
		t.Errorf("unwrapped: %q", got)
	}
}
