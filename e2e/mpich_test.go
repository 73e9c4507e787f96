package e2e

import (
	"fmt"
	"testing"

	"prsh/testbed"
)

// TestMPICHWorld: an MPICH program sees one world of every rank, by slot
// and by node, on one node and on many: the job map, PMI_process_mapping
// and the fences over the daemon tree really serve it. Before the PMI
// services it ran as N singletons of size 1 and exited 0.
func TestMPICHWorld(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 8, Slots: 4})
	cases := []struct {
		name string
		args []string
		np   int
	}{
		{"1 rank", []string{"-np", "1"}, 1},
		{"4 ranks on 1 node", []string{"-H", "node001:4", "-np", "4"}, 4},
		{"32 ranks on 8 nodes by slot", []string{"-np", "32", "--spawn-degree", "2"}, 32},
		{"32 ranks on 8 nodes by node", []string{"-np", "32", "--map-by", "node", "--routed", "binomial"}, 32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(tc.args, hello)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
			}
			sum := tc.np * (tc.np - 1) / 2
			var want []string
			for r := range tc.np {
				want = append(want, fmt.Sprintf("rank %d of %d sum %d", r, tc.np, sum))
			}
			checkLines(t, res.stdout, want)
		})
	}
}

// TestMPICHPairs: every pair of 12 ranks on 6 nodes exchanges 256 KiB
// both ways, and a thread-multiple init works: the addresses the ranks
// put in the modex are the ones their peers get.
func TestMPICHPairs(t *testing.T) {
	pairs, threads := mpich(t, "pairs"), mpich(t, "threads")
	c := cluster(t, testbed.Config{Nodes: 6, Slots: 2})
	res := mpirun(t, c, "-np", "12", "--spawn-degree", "2", pairs)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range 12 {
		want = append(want, fmt.Sprintf("rank %d of 12: 0 bad words in the job", r))
	}
	checkLines(t, res.stdout, want)

	res = mpirun(t, c, "-np", "6", "--map-by", "node", threads)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("thread multiple: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	want = nil
	for r := range 6 {
		want = append(want, fmt.Sprintf("rank %d of 6 thread level 1", r))
	}
	checkLines(t, res.stdout, want)
}

// TestMPICHFailures: MPI_Abort ends every rank with the status it gave;
// a rank that leaves without MPI_Finalize ends the job instead of
// leaving the others waiting in a fence. One line of mpirun's names the
// rank and the node; nothing is left running.
func TestMPICHFailures(t *testing.T) {
	abort, nofinalize := mpich(t, "abort"), mpich(t, "nofinalize")
	c := cluster(t, testbed.Config{Nodes: 4})
	res := mpirun(t, c, abort)
	if res.status != 7 {
		t.Errorf("MPI_Abort(7): exit %d, want 7; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node003: rank 2 called MPI_Abort with status 7`)

	res = mpirun(t, c, nofinalize)
	if res.status != 255 {
		t.Errorf("exit without finalize: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node002: rank 1 exited with status 0 without finalizing MPI \(PMI\)$`)
}

// withoutPMIFD runs a program the way a tool or a wrapper may: without
// the inherited PMI socket, so that its PMI client has only PMI_PORT and
// PMI_ID to find its orted by.
func withoutPMIFD(program string) []string {
	return []string{"sh", "-c", "unset PMI_FD; exec 3>&-; exec " + program}
}

// TestMPICHOverPMIPort: MPICH ranks whose PMI client reaches its orted
// over PMI_PORT run as one world, by slot and by node; MPI_Abort and an
// exit without MPI_Finalize on that connection end the job as they do on
// the inherited socket, since it counts as the rank's PMI connection.
func TestMPICHOverPMIPort(t *testing.T) {
	hello, abort, nofinalize := mpich(t, "hello"), mpich(t, "abort"), mpich(t, "nofinalize")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	for _, mapBy := range []string{"slot", "node"} {
		t.Run("hello by "+mapBy, func(t *testing.T) {
			res := mpirun(t, c, append([]string{"-np", "8", "--map-by", mapBy}, withoutPMIFD(hello)...)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
			}
			var want []string
			for r := range 8 {
				want = append(want, fmt.Sprintf("rank %d of 8 sum 28", r))
			}
			checkLines(t, res.stdout, want)
		})
	}
	t.Run("abort", func(t *testing.T) {
		res := mpirun(t, c, append([]string{"-np", "4", "--map-by", "node"}, withoutPMIFD(abort)...)...)
		if res.status != 7 {
			t.Errorf("MPI_Abort(7): exit %d, want 7; stderr:\n%s", res.status, res.stderr)
		}
		checkMpirunLine(t, res.stderr, `^mpirun: node003: rank 2 called MPI_Abort with status 7`)
	})
	t.Run("no finalize", func(t *testing.T) {
		res := mpirun(t, c, append([]string{"-np", "4", "--map-by", "node"}, withoutPMIFD(nofinalize)...)...)
		if res.status != 255 {
			t.Errorf("exit without finalize: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
		}
		checkMpirunLine(t, res.stderr, `^mpirun: node002: rank 1 exited with status 0 without finalizing MPI \(PMI\)$`)
	})
}

// TestMPICHPrefersPMIFD: with both set, MPICH's client uses PMI_FD: a
// PMI_PORT where nothing listens does not stop it.
func TestMPICHPrefersPMIFD(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	res := mpirun(t, c, "-np", "4", "env", "PMI_PORT=127.0.0.1:1", hello)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0 of 4 sum 6", "rank 1 of 4 sum 6", "rank 2 of 4 sum 6", "rank 3 of 4 sum 6"})
}
