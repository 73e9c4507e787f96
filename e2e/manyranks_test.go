package e2e

import (
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"prsh/testbed"
)

// sessionScript prints the rank, its pid and its session (the 6th field
// of /proc/pid/stat; comm, sh, has no blank), one line per rank.
const sessionScript = `read -r pid _ _ _ _ sid _ < /proc/$$/stat; echo "$PRSH_RANK $pid $sid"`

// TestRankSessionOfItsOwn: every rank leads a session of its own, as
// under Hydra, both when mpirun runs its node's ranks and under an orted.
// With the kernel's autogroup scheduling a session is one scheduling
// group: 64 ranks sharing mpirun's session shared one process's worth of
// a loaded machine's CPUs, and an MPICH job took twice Hydra's time.
func TestRankSessionOfItsOwn(t *testing.T) {
	ours, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]struct {
		bed  testbed.Config
		args []string
	}{
		"mpirun's node": {testbed.Config{Nodes: 1}, append(ownNode, "-np", "4")},
		"under orted":   {testbed.Config{Nodes: 2, Slots: 2}, []string{"-np", "4"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := cluster(t, cfg.bed)
			res := mpirun(t, c, append(cfg.args, "sh", "-c", sessionScript)...)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			got := lines(res.stdout)
			if len(got) != 4 {
				t.Fatalf("want 4 lines, got %q", got)
			}
			for _, l := range got {
				var rank, pid, sid int
				if _, err := fmt.Sscan(l, &rank, &pid, &sid); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				if sid != pid {
					t.Errorf("rank %d (pid %d) is in session %d, want its own (the test's is %d)", rank, pid, sid, ours)
				}
			}
		})
	}
}

// TestOpenMPIYieldsWhereCrowded: where a node runs more ranks than it has
// CPUs, its ranks are told so as ORTE tells them where a node has more
// ranks than slots (OMPI_MCA_mpi_oversubscribe=1), and Open MPI then
// yields the CPU while it waits rather than spinning against the rank it
// waits for; not where each rank has a CPU, and not over the job's -x.
func TestOpenMPIYieldsWhereCrowded(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	crowd := set.Count() + 1
	c := cluster(t, testbed.Config{Nodes: 1})
	run := func(n int, extra ...string) []string {
		t.Helper()
		args := append([]string{"-H", fmt.Sprintf("localhost:%d", n), "--pmix", "off", "-np", itoa(n)}, extra...)
		res := mpirun(t, c, append(args, "sh", "-c", `echo "${OMPI_MCA_mpi_oversubscribe-unset}"`)...)
		if res.status != 0 {
			t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
		}
		return lines(res.stdout)
	}
	want := func(got []string, n int, value string) {
		t.Helper()
		if len(got) != n || slices.ContainsFunc(got, func(v string) bool { return v != value }) {
			t.Errorf("the %d ranks saw %q, want each %q", n, got, value)
		}
	}
	want(run(crowd), crowd, "1")
	want(run(1), 1, "unset")
	want(run(crowd, "-x", "OMPI_MCA_mpi_oversubscribe=0"), crowd, "0")
}
