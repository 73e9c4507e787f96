package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"prsh/job/binding"
	"prsh/testbed"
)

// TestBindWithinAffinityMask: mpirun started under taskset binds its
// local ranks only to the CPUs the mask leaves it, for every unit, and
// leaves unbound ranks inside the mask; more ranks than the mask's cores
// is one line naming the CPUs it had, as on a node whose batch system
// gave the job fewer CPUs than the machine has. (The Slurm of
// testbed/slurm cannot confine CPUs: see TestSlurmJob.)
func TestBindWithinAffinityMask(t *testing.T) {
	cores, _ := machineCores(t)
	if cores < 2 {
		t.Skip("one core: a mask cannot leave fewer")
	}
	c := cluster(t, testbed.Config{Nodes: 1})
	last := lastCPU(t)
	masked := func(args ...string) result {
		t.Helper()
		argv := append([]string{"-c", last, filepath.Join(bin, "mpirun"), "-H", "localhost:2"}, args...)
		res := runMpirun(t, "taskset", append(os.Environ(), c.Env()...), argv...)
		if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
			c.KillLeftovers()
			t.Fatalf("mpirun %v left processes running: %+v", args, left)
		}
		return res
	}
	for _, args := range [][]string{
		{"-np", "1", "--bind-to", "core"},
		{"-np", "1", "--bind-to", "hwthread"},
		{"-np", "1", "--bind-to", "socket", "--map-by", "socket"},
		{"-np", "2", "--bind-to", "core:overload-allowed"},
		{"-np", "2", "--bind-to", "none"},
	} {
		res := masked(append(args, "sh", "-c", showAffinity)...)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("%v: exit %d; stderr:\n%s", args, res.status, res.stderr)
		}
		var want []string
		for r := range len(lines(res.stdout)) {
			want = append(want, fmt.Sprintf("%d %s", r, last))
		}
		if len(want) != 1 && len(want) != 2 {
			t.Fatalf("%v: stdout:\n%s", args, res.stdout)
		}
		wantSet(t, res.stdout, want...)
	}
	res := masked("-np", "2", "--bind-to", "core", "true")
	if res.status != 255 {
		t.Errorf("two ranks on one allowed core: exit %d, want 255", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: localhost: rank \d: cannot bind: 2 ranks but 1 cores to bind them to \(--bind-to core\); .*; the job may use cpus `+last+` here$`)
}

// lastCPU is the highest CPU this test may run on, as taskset names it.
func lastCPU(t *testing.T) string {
	t.Helper()
	_, all := machineCores(t)
	ids, err := binding.ParseList(all)
	if err != nil || len(ids) == 0 {
		t.Fatalf("cpus %q: %v", all, err)
	}
	return fmt.Sprint(ids[len(ids)-1])
}
