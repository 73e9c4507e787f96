package guard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCgroupKillsEverything: a rank the guard starts in its job's cgroup
// is born in it, and so is what it starts, wherever it goes (setsid,
// orphaned); the job's kill takes it all, the cgroup can be removed, and
// the guard, which runs outside it, goes on.
func TestCgroupKillsEverything(t *testing.T) {
	cg, err := NewCgroup()
	if err != nil {
		t.Skipf("no job cgroup here (the guards alone contain the ranks): %v", err)
	}
	defer cg.Remove(10 * time.Second)
	file := filepath.Join(t.TempDir(), "pid")
	g := startGuard(t)
	s := RankStart{Job: 1, Cgroup: cg.Dir(), Path: "/bin/sh", Dir: "/", Env: []string{"PATH=" + os.Getenv("PATH")},
		Args: []string{"sh", "-c", `( env -i setsid /bin/sh -c 'echo $$ > ` + file + `.tmp; /bin/mv ` + file + `.tmp ` + file + `; exec /bin/sleep 60' & ); exec sleep 60`}}
	s.Stdout, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	s.Stderr = s.Stdout
	defer s.Stdout.Close()
	if err := g.StartRank(s); err != nil {
		t.Fatal(err)
	}
	if rep := next(t, g); rep.Kind != Running {
		t.Fatalf("answer %+v, want running", rep)
	}
	escapee := waitPid(t, file)
	for _, pid := range []int{escapee, g.Pid()} {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if in := strings.Contains(string(b), "/"+filepath.Base(cg.Dir())); in != (pid == escapee) {
			t.Errorf("process %d (guard %d) in %s: %v; its cgroup: %s", pid, g.Pid(), cg.Dir(), in, b)
		}
	}
	handRank(t, g, 0, "exec sleep 60", nil, 2) // another job, running alone once job 1 is gone
	next(t, g)
	g.KillJob(1)
	if rep := next(t, g); rep.Kind != Exited || rep.Job != 1 {
		t.Fatalf("report %+v, want job 1's rank killed", rep)
	}
	waitGone(t, escapee)
	if err := cg.Remove(10 * time.Second); err != nil { // the daemon's part
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.Dir()); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", cg.Dir(), err)
	}
	if !alive(g.Pid()) {
		t.Error("the guard went with its job's cgroup")
	}
}

// TestRankOutsideCgroup: a rank whose job cgroup the kernel cannot start
// it in (here a prsh-job-* directory that is no cgroup, as on a kernel,
// or under a seccomp filter, that refuses clone3 into a cgroup) starts
// outside it, and runs.
func TestRankOutsideCgroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), cgroupPrefix+"not-a-cgroup")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g := startGuard(t)
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer null.Close()
	for rank := range 2 {
		s := RankStart{Job: 1, Cgroup: dir, Rank: rank, Path: "/bin/sh", Args: []string{"sh", "-c", "exit 0"}, Dir: "/", Stdout: null, Stderr: null}
		if err := g.StartRank(s); err != nil {
			t.Fatal(err)
		}
		if rep := next(t, g); rep.Kind != Running {
			t.Fatalf("rank %d: %+v, want running outside the cgroup", rank, rep)
		}
		if rep := next(t, g); rep.Kind != Exited || rep.Wait.ExitStatus() != 0 {
			t.Errorf("rank %d: %+v, want exit 0", rank, rep)
		}
	}
}

// TestOOMKills reads the OOM killer's count from memory.events, and
// fails where the memory controller gives the cgroup none.
func TestOOMKills(t *testing.T) {
	dir := t.TempDir()
	cg := &Cgroup{dir: dir}
	if _, err := cg.OOMKills(); err == nil {
		t.Error("a count without memory.events")
	}
	events := "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n"
	if err := os.WriteFile(filepath.Join(dir, "memory.events"), []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := cg.OOMKills(); n != 2 || err != nil {
		t.Errorf("OOMKills = %d, %v; want 2", n, err)
	}
}
