package guard

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is its own guard, as orted is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardArg {
		RunGuard(os.Args[2:])
	}
	os.Exit(m.Run())
}

// startGuarded runs script under a guard.
func startGuarded(t *testing.T, script string) *Guard {
	t.Helper()
	g, err := GuardCommand(exec.Command("/bin/sh", "-c", script), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.End() })
	return g
}

// waitPid polls until file holds a pid.
func waitPid(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return pid
		}
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestGuardReportsTheRank(t *testing.T) {
	g := startGuarded(t, "kill -SEGV $$")
	ws := g.Wait()
	if !ws.Signaled() || ws.Signal() != syscall.SIGSEGV {
		t.Fatalf("status %v, want killed by SIGSEGV", ws)
	}
	g.Reap()
	if got := g.Cmd.ProcessState.ExitCode(); got != 128+11 {
		t.Errorf("the guard exited %d, want 139", got)
	}
}

// TestGuardKillsEscapees: a process that left the rank's group and
// session, and lost its parent, outlives the rank until the daemon ends
// the guard, and not after: it came back to the guard, not to init.
func TestGuardKillsEscapees(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pid")
	g := startGuarded(t, `( setsid sh -c 'echo $$ > `+file+`.tmp; mv `+file+`.tmp `+file+`; exec sleep 60' & ); `+
		`while [ ! -e `+file+` ]; do sleep 0.01; done`)
	escapee := waitPid(t, file)
	if ws := g.Wait(); ws.ExitStatus() != 0 {
		t.Fatalf("rank status %v", ws)
	}
	if got := parentOf(escapee); got != g.Cmd.Process.Pid {
		t.Fatalf("the escapee's parent is %d, want the guard %d", got, g.Cmd.Process.Pid)
	}
	g.End()
	g.Reap()
	if alive(escapee) {
		t.Fatal("the escapee outlived its guard")
	}
}

// TestGuardKeepsOutOfTheGroup: SIGKILL to the rank's group does not take
// the guard, which reports the rank's end.
func TestGuardKeepsOutOfTheGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pid")
	g := startGuarded(t, `echo $$ > `+file+`.tmp; mv `+file+`.tmp `+file+`; exec sleep 60`)
	waitPid(t, file)
	guard := g.Cmd.Process.Pid
	for pgid, _ := syscall.Getpgid(guard); pgid == guard; pgid, _ = syscall.Getpgid(guard) {
		time.Sleep(10 * time.Millisecond) // the guard leaves right after starting the rank
	}
	syscall.Kill(-guard, syscall.SIGKILL)
	if ws := g.Wait(); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("status %v, want the rank's SIGKILL", ws)
	}
}

// TestRankExitingSeesTheRank: a guarded rank that runs is not exiting,
// whatever it left behind; once it has exited (its guard about to report
// it, or gone) it is.
func TestRankExitingSeesTheRank(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pid")
	g := startGuarded(t, `( sleep 60 & ); echo $$ > `+file+`.tmp; mv `+file+`.tmp `+file+`; exec sleep 60`)
	rank := waitPid(t, file)
	go g.Wait() // as the daemon does: it learns the rank's pid
	for g.rank.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if g.RankExiting() {
		t.Fatal("a running rank reads as exiting")
	}
	syscall.Kill(rank, syscall.SIGKILL)
	for i := 0; i < 100 && !g.RankExiting(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !g.RankExiting() {
		t.Fatal("a killed rank does not read as exiting")
	}
}
