package guard

import (
	"errors"
	"io"
	"os"
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

// startGuard starts a node guard in cg (nil: none); the test's end ends
// it.
func startGuard(t *testing.T, cg *Cgroup) *Guard {
	t.Helper()
	g, err := Start(time.Minute, cg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endGuard(g) })
	return g
}

// endGuard ends g and returns how it ended, once every report is read.
func endGuard(g *Guard) syscall.WaitStatus {
	g.End()
	for {
		if _, err := g.Next(); err != nil {
			return g.Wait()
		}
	}
}

// startRank has g start script as rank, its stdout to out (nil:
// /dev/null), and returns the guard's answer, the next report.
func startRank(t *testing.T, g *Guard, rank int, script string, out *os.File, env ...string) Report {
	t.Helper()
	handRank(t, g, rank, script, out, env...)
	return next(t, g)
}

// handRank asks g to start script as rank, its stdout to out (nil:
// /dev/null).
func handRank(t *testing.T, g *Guard, rank int, script string, out *os.File, env ...string) {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if out == nil {
		out = null
	}
	s := RankStart{Rank: rank, Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: "/",
		Env: append([]string{"PATH=" + os.Getenv("PATH")}, env...), Stdout: out, Stderr: null}
	if err := g.StartRank(s); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, g *Guard) Report {
	t.Helper()
	rep, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	return rep
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

// TestGuardReportsEachRank: each rank's end is reported with its exact
// status, after its start; a program that cannot run is not started.
func TestGuardReportsEachRank(t *testing.T) {
	g := startGuard(t, nil)
	if rep := startRank(t, g, 0, "kill -SEGV $$", nil); rep.Kind != Running || rep.Pid <= 0 {
		t.Fatalf("answer %+v, want rank 0 running", rep)
	}
	handRank(t, g, 1, "exit 3", nil) // its answer may come after rank 0's end
	running, ended := map[int]bool{0: true}, map[int]syscall.WaitStatus{}
	for rep := next(t, g); ; rep = next(t, g) {
		switch {
		case rep.Kind == Running && rep.Rank == 1 && rep.Pid > 0:
			running[1] = true
		case rep.Kind == Exited && running[rep.Rank]:
			ended[rep.Rank] = rep.Wait
		default:
			t.Fatalf("report %+v, want rank 1 running or an end after a start", rep)
		}
		if len(ended) == 2 {
			break
		}
	}
	if ws := ended[0]; !ws.Signaled() || ws.Signal() != syscall.SIGSEGV {
		t.Errorf("rank 0: %v, want killed by SIGSEGV", ws)
	}
	if ws := ended[1]; !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("rank 1: %v, want exit 3", ws)
	}
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	g.StartRank(RankStart{Rank: 2, Path: "/no/such/program", Args: []string{"x"}, Dir: "/", Stdout: null, Stderr: null})
	if rep := next(t, g); rep.Kind != Failed || rep.Rank != 2 || rep.Status != 127 {
		t.Errorf("answer %+v, want rank 2 not started, 127", rep)
	}
	if ws := endGuard(g); ws.ExitStatus() != 0 {
		t.Errorf("the guard ended %v, want exit 0", ws)
	}
}

// TestGuardPassesLongMessages: a start larger than a datagram (a long
// environment) reaches the rank whole, as do its pipes.
func TestGuardPassesLongMessages(t *testing.T) {
	g := startGuard(t, nil)
	long := strings.Repeat("x", 3*maxDatagram)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	startRank(t, g, 0, `printf %s "$LONG"`, w, "LONG="+long)
	w.Close()
	got, _ := io.ReadAll(r)
	if string(got) != long {
		t.Errorf("the rank read %d bytes of LONG, want %d", len(got), len(long))
	}
}

// TestGuardKillsEscapees: a process that left its rank's group and
// session, and lost its parent, outlives the rank until the daemon ends
// the guard, and not after: it came back to the guard, not to init.
func TestGuardKillsEscapees(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pid")
	g := startGuard(t, nil)
	startRank(t, g, 0, `( setsid sh -c 'echo $$ > `+file+`.tmp; mv `+file+`.tmp `+file+`; exec sleep 60' & ); `+
		`while [ ! -e `+file+` ]; do sleep 0.01; done`, nil)
	escapee := waitPid(t, file)
	if rep := next(t, g); rep.Kind != Exited || rep.Wait.ExitStatus() != 0 {
		t.Fatalf("report %+v, want rank 0's exit 0", rep)
	}
	if got := parentOf(escapee); got != g.Pid() {
		t.Fatalf("the escapee's parent is %d, want the guard %d", got, g.Pid())
	}
	endGuard(g)
	if alive(escapee) {
		t.Fatal("the escapee outlived its guard")
	}
}

// TestGuardKeepsOutOfTheGroup: SIGKILL to a rank's group does not take
// the guard, which reports the rank's end.
func TestGuardKeepsOutOfTheGroup(t *testing.T) {
	g := startGuard(t, nil)
	rep := startRank(t, g, 0, `exec sleep 60`, nil)
	if pgid, _ := syscall.Getpgid(rep.Pid); pgid != rep.Pid {
		t.Fatalf("the rank's group is %d, want its own %d", pgid, rep.Pid)
	}
	syscall.Kill(-rep.Pid, syscall.SIGKILL)
	if rep := next(t, g); rep.Kind != Exited || !rep.Wait.Signaled() || rep.Wait.Signal() != syscall.SIGKILL {
		t.Fatalf("report %+v, want the rank's SIGKILL", rep)
	}
	if !alive(g.Pid()) || parentOf(g.Pid()) != os.Getpid() {
		t.Fatal("the guard went with the rank's group")
	}
}

// TestRankExitingSeesTheRank: a running rank is not exiting, whatever it
// left behind; once it has exited (its guard about to report it, or
// gone) it is.
func TestRankExitingSeesTheRank(t *testing.T) {
	g := startGuard(t, nil)
	rep := startRank(t, g, 0, `( sleep 60 & ); exec sleep 60`, nil)
	if g.RankExiting(rep.Pid) {
		t.Fatal("a running rank reads as exiting")
	}
	syscall.Kill(rep.Pid, syscall.SIGKILL)
	for i := 0; i < 100 && !g.RankExiting(rep.Pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !g.RankExiting(rep.Pid) {
		t.Fatal("a killed rank does not read as exiting")
	}
}

// TestGuardKill: asked to kill, the guard kills every rank, reports each
// end, and exits; a start after that is refused.
func TestGuardKill(t *testing.T) {
	g := startGuard(t, nil)
	for rank := range 3 {
		startRank(t, g, rank, `exec sleep 60`, nil)
	}
	g.Kill()
	for range 3 {
		if rep := next(t, g); rep.Kind != Exited || rep.Wait.Signal() != syscall.SIGKILL {
			t.Fatalf("report %+v, want a rank killed by SIGKILL", rep)
		}
	}
	if _, err := g.Next(); err != io.EOF {
		t.Fatalf("after the kill: %v, want the guard's end", err)
	}
	if ws := g.Wait(); ws.ExitStatus() != 0 {
		t.Errorf("the guard ended %v, want exit 0", ws)
	}
}

// TestStartAfterTheGuardEnded: a start sent to a guard that has died
// fails as ErrGone, not as a broken pipe, and Ended then says how the
// guard ended, once it is reaped: the rank is told the guard's end.
func TestStartAfterTheGuardEnded(t *testing.T) {
	g, err := Start(time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.KillProcess()
	for err == nil { // its socket closes as it dies
		err = g.send(newMessage(kindKill), nil)
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, ErrGone) {
		t.Fatalf("a message to a dead guard: %v, want ErrGone", err)
	}
	go g.Wait()
	if ws := g.Ended(); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the guard ended %v, want killed by SIGKILL", ws)
	}
	if err := g.send(newMessage(kindKill), nil); !errors.Is(err, ErrGone) {
		t.Errorf("a message to a reaped guard: %v, want ErrGone", err)
	}
}
