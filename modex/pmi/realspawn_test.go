//go:build linux

package pmi

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"prsh/modex"
)

// TestSlurmLibPMI2Spawn drives Slurm's libpmi2 (a real PMI-2 client, the
// code MPICH's PMI-2 builds share) through MPI_Comm_spawn_multiple's
// PMI2_Job_Spawn and the name service at the wire, over a memJob: what
// the launcher is asked, a refusal the client must see as a failure,
// and a spawned rank that knows its parent (WIRE.md §9). Debian's MPICH
// cannot spawn at all (MPI_Open_port is unsupported by ch4:ucx).
func TestSlurmLibPMI2Spawn(t *testing.T) {
	bin := compileLibPMI2(t, "pmi2spawn.c")
	t.Run("parent", func(t *testing.T) {
		run := runJob(t, []int{0}, nil, bin, "parent")
		run.mustSucceed(t)
		mustPrint(t, run, "pmi2 parent: spawned kvs_prsh_test_1, name service OK")
		want := modex.SpawnRequest{
			Apps: []modex.SpawnApp{
				{Argv: []string{"./master", "child-arg one", "x=y;z"}, NP: 2, Info: map[string]string{"wdir": "/tmp"}},
				{Argv: []string{"./worker"}, NP: 3},
			},
			Preput: map[string]string{"PARENT_ROOT_PORT_NAME": "tag#0$description#vm$port#59471$ifname#192.0.2.2$"},
		}
		run.job.mu.Lock()
		defer run.job.mu.Unlock()
		if len(run.job.spawns) != 1 || !reflect.DeepEqual(run.job.spawns[0], want) {
			t.Errorf("the launcher was asked %+v,\nwant %+v", run.job.spawns, want)
		}
		if len(run.job.names) != 0 {
			t.Errorf("names left published: %v", run.job.names)
		}
	})
	t.Run("refused", func(t *testing.T) {
		run := runJob(t, []int{0}, func(j *memJob) { j.spawnErr = errNoSlots }, bin, "refused")
		run.mustSucceed(t)
		mustPrint(t, run, "pmi2 refused spawn failed: OK")
	})
	t.Run("child", func(t *testing.T) {
		spawned := func(j *memJob) {
			j.info.Spawner = "kvs_parent"
			j.store["PARENT_ROOT_PORT_NAME"] = "tag#0$description#vm$port#59471$ifname#192.0.2.2$"
		}
		run := runJob(t, []int{0, 0}, spawned, bin, "child")
		run.mustSucceed(t)
		mustPrint(t, run, "pmi2 child of its parent: OK")
	})
}

func mustPrint(t *testing.T, run jobRun, want string) {
	t.Helper()
	for r, out := range run.outs {
		if !strings.Contains(out, want) {
			t.Errorf("rank %d printed %q, want %q", r, out, want)
		}
	}
}

// compileLibPMI2 builds a test program against Slurm's libpmi2, or skips.
func compileLibPMI2(t *testing.T, src string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PMI-2 programs")
	}
	if _, err := os.Stat("/usr/include/slurm/pmi2.h"); err != nil {
		t.Skip("slurm/pmi2.h not found: apt-get install -y libpmi2-0-dev")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) found")
	}
	return compile(t, cc, src, "-lpmi2")
}

// TestMPICHNameService: Debian's MPICH sends MPI_Publish_name,
// MPI_Lookup_name and MPI_Unpublish_name to the PMI-1 server (WIRE.md
// §4.3); two ranks, one publishing, both looking up.
func TestMPICHNameService(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MPI programs")
	}
	mpicc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		t.Skip("mpicc.mpich not found: apt-get install -y mpich libmpich-dev")
	}
	bin := compile(t, mpicc, "mpinames.c")
	run := runJob(t, []int{0, 0}, nil, bin)
	run.mustSucceed(t)
	for r := range run.outs {
		if want := fmt.Sprintf("names rank %d: OK", r); !strings.Contains(run.outs[r], want) {
			t.Errorf("rank %d printed %q, want %q", r, run.outs[r], want)
		}
	}
}
