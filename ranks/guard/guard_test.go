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

// startGuard starts a node guard; the test's end ends it.
func startGuard(t *testing.T) *Guard {
	t.Helper()
	g, err := Start(time.Minute)
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

// startRank has g start script as rank of job, its stdout to out (nil:
// /dev/null), and returns the guard's answer, the next report.
func startRank(t *testing.T, g *Guard, rank int, script string, out *os.File, job int, env ...string) Report {
	t.Helper()
	handRank(t, g, rank, script, out, job, env...)
	return next(t, g)
}

// handRank asks g to start script as rank of job, its stdout to out
// (nil: /dev/null).
func handRank(t *testing.T, g *Guard, rank int, script string, out *os.File, job int, env ...string) {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if out == nil {
		out = null
	}
	s := RankStart{Job: job, Rank: rank, Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: "/",
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
	g := startGuard(t)
	if rep := startRank(t, g, 0, "kill -SEGV $$", nil, 0); rep.Kind != Running || rep.Pid <= 0 {
		t.Fatalf("answer %+v, want rank 0 running", rep)
	}
	handRank(t, g, 1, "exit 3", nil, 0) // its answer may come after rank 0's end
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

// TestGuardStartsSideBySide: ranks handed at once start side by side
// (parallelStarts), and each is reported running and then ended with its
// own status, also one that ended before its start was noted. A kill
// right after a burst of starts takes every rank of it, none left over.
func TestGuardStartsSideBySide(t *testing.T) {
	g := startGuard(t)
	const n = 4 * parallelStarts
	for rank := range n {
		handRank(t, g, rank, "exit "+strconv.Itoa(rank), nil, 1)
	}
	running := map[int]bool{}
	for ended := 0; ended < n; {
		switch rep := next(t, g); {
		case rep.Kind == Running && !running[rep.Rank]:
			running[rep.Rank] = true
		case rep.Kind == Exited && running[rep.Rank]:
			if rep.Wait.ExitStatus() != rep.Rank {
				t.Errorf("rank %d: %v, want exit %d", rep.Rank, rep.Wait, rep.Rank)
			}
			ended++
		default:
			t.Fatalf("report %+v, want a rank's start, or its end after its start", rep)
		}
	}
	for rank := range n {
		handRank(t, g, rank, "exec sleep 60", nil, 2)
	}
	if err := g.KillJob(2); err != nil {
		t.Fatal(err)
	}
	killed := 0
	for killed < n {
		switch rep := next(t, g); {
		case rep.Kind == Running:
		case rep.Kind == Exited && rep.Wait.Signal() == syscall.SIGKILL:
			killed++
		default:
			t.Fatalf("report %+v, want job 2's ranks started and killed", rep)
		}
	}
	if ws := endGuard(g); ws.ExitStatus() != 0 {
		t.Errorf("the guard ended %v, want exit 0", ws)
	}
}

// TestGuardPassesLongMessages: a start larger than a datagram (a long
// environment) reaches the rank whole, as do its pipes.
func TestGuardPassesLongMessages(t *testing.T) {
	g := startGuard(t)
	long := strings.Repeat("x", 3*maxDatagram)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	startRank(t, g, 0, `printf %s "$LONG"`, w, 0, "LONG="+long)
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
	g := startGuard(t)
	startRank(t, g, 0, `( setsid sh -c 'echo $$ > `+file+`.tmp; mv `+file+`.tmp `+file+`; exec sleep 60' & ); `+
		`while [ ! -e `+file+` ]; do sleep 0.01; done`, nil, 0)
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
	g := startGuard(t)
	rep := startRank(t, g, 0, `exec sleep 60`, nil, 0)
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
	g := startGuard(t)
	rep := startRank(t, g, 0, `( sleep 60 & ); exec sleep 60`, nil, 0)
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

// TestGuardKillsOneJob: asked to kill a job, the guard kills its ranks
// (reporting each end) and what they started, wherever it went, and
// nothing of the other job, which it goes on serving; a process that
// cleared its environment, whose job cannot be told while two run, is
// left until the guard's end.
func TestGuardKillsOneJob(t *testing.T) {
	dir := t.TempDir()
	g := startGuard(t)
	escape := func(job, rank int, clean string) int {
		file := filepath.Join(dir, strconv.Itoa(job)+"-"+strconv.Itoa(rank))
		handRank(t, g, rank, `( setsid `+clean+` /bin/sh -c 'echo $$ > `+file+`.tmp; /bin/mv `+file+`.tmp `+file+`; exec /bin/sleep 60' & ); exec sleep 60`, nil, job)
		if rep := next(t, g); rep.Kind != Running || rep.Job != job || rep.Rank != rank {
			t.Fatalf("answer %+v, want job %d rank %d running", rep, job, rank)
		}
		return waitPid(t, file)
	}
	one := []int{escape(1, 0, ""), escape(1, 1, "")}
	cleared := escape(1, 2, "env -i")
	two := []int{escape(2, 0, ""), escape(2, 1, "")}
	if err := g.KillJob(1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if rep := next(t, g); rep.Kind != Exited || rep.Job != 1 || rep.Wait.Signal() != syscall.SIGKILL {
			t.Fatalf("report %+v, want a rank of job 1 killed by SIGKILL", rep)
		}
	}
	for _, pid := range one {
		waitGone(t, pid)
	}
	for _, pid := range append(two, cleared, g.Pid()) {
		if !alive(pid) {
			t.Errorf("process %d went with job 1's kill", pid)
		}
	}
	if rep := startRank(t, g, 5, "exit 4", nil, 3); rep.Kind != Running || rep.Job != 3 {
		t.Fatalf("a start after a job's kill: %+v, want running", rep)
	}
	if rep := next(t, g); rep.Kind != Exited || rep.Job != 3 || rep.Wait.ExitStatus() != 4 {
		t.Fatalf("report %+v, want job 3's rank 5 exited 4", rep)
	}
	endGuard(g)
	for _, pid := range append(two, cleared) {
		if alive(pid) {
			t.Errorf("process %d outlived the guard", pid)
		}
	}
}

// waitGone waits until pid has exited (a zombie counts: its parent is to
// reap it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !exiting(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
	}
}

// TestStartAfterTheGuardEnded: a start sent to a guard that has died
// fails as ErrGone, not as a broken pipe, and Ended then says how the
// guard ended, once it is reaped: the rank is told the guard's end.
func TestStartAfterTheGuardEnded(t *testing.T) {
	g, err := Start(time.Minute)
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

// TestAwaitEnd: a guard told to end is waited for until it has; one
// stopped (SIGSTOP) is given up at the first tick.
func TestAwaitEnd(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		g, err := Start(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		go func() { // as a daemon reads the reports until the guard's end
			for {
				if _, err := g.Next(); err != nil {
					g.Wait()
					return
				}
			}
		}()
		if stopped {
			syscall.Kill(g.Pid(), syscall.SIGSTOP)
		}
		g.End()
		begun := time.Now()
		ended := g.AwaitEnd(300*time.Millisecond, time.Minute)
		if ended == stopped {
			t.Errorf("stopped %v: AwaitEnd says ended %v", stopped, ended)
		}
		if stopped && time.Since(begun) > 30*time.Second {
			t.Errorf("a stopped guard was waited for %v", time.Since(begun))
		}
		g.KillProcess()
		g.Ended()
	}
}
