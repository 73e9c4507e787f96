package daemon

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"prsh/errmgr/proc"
)

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
		return &rank{guard: &proc.Guard{Cmd: cmd}, reaped: true}
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
