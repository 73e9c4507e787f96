package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCgroupKillsEverything: what a process in the job's cgroup starts is
// born in it, wherever it goes (setsid, orphaned), and the kill takes it
// all; then the cgroup is removed.
func TestCgroupKillsEverything(t *testing.T) {
	cg, err := NewCgroup()
	if err != nil {
		t.Skipf("no job cgroup here (the guards alone contain the ranks): %v", err)
	}
	file := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("/bin/sh", "-c", `( setsid sh -c 'echo $$ > `+file+`.tmp; mv `+file+`.tmp `+file+`; exec sleep 60' & )`)
	cg.Place(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	escapee := waitPid(t, file)
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(escapee) + "/cgroup")
	if !strings.Contains(string(b), "/"+filepath.Base(cg.Dir())) {
		t.Fatalf("the escapee is not in %s: %s", cg.Dir(), b)
	}
	if err := cg.Remove(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.Dir()); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", cg.Dir(), err)
	}
	if !exiting(escapee) { // gone, or a zombie until init reaps it
		t.Error("the escapee survived the cgroup's kill")
	}
}

// TestGuardOutsideCgroup: a guard placed in a cgroup that the kernel
// cannot start it in (here a directory that is no cgroup, as on a kernel
// or under a seccomp filter that refuses clone3 into a cgroup) starts
// outside it and says why; one placed in a real cgroup starts in it.
func TestGuardOutsideCgroup(t *testing.T) {
	dir := t.TempDir()
	fd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	g := startIn(t, &Cgroup{dir: dir, fd: fd})
	if g.OutsideCgroup == nil {
		t.Errorf("a guard started in %s, which is no cgroup", dir)
	}
	cg, err := NewCgroup()
	if err != nil {
		t.Skipf("no job cgroup here: %v", err)
	}
	defer cg.Remove(10 * time.Second)
	if g := startIn(t, cg); g.OutsideCgroup != nil {
		t.Errorf("a guard did not start in %s: %v", cg.Dir(), g.OutsideCgroup)
	}
}

// startIn runs /bin/true under a guard placed in cg, to its end.
func startIn(t *testing.T, cg *Cgroup) *Guard {
	t.Helper()
	g, err := Start(time.Minute, cg)
	if err != nil {
		t.Fatal(err)
	}
	defer endGuard(g)
	if rep := startRank(t, g, 0, "exit 0", nil); rep.Kind != Running {
		t.Fatalf("/bin/true under the guard: %+v", rep)
	}
	if rep := next(t, g); rep.Kind != Exited || rep.Wait.ExitStatus() != 0 {
		t.Errorf("/bin/true under the guard: %+v", rep)
	}
	return g
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
