package main

import (
	"fmt"
	"strings"
	"testing"

	"prsh/testbed"
)

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

// TestPMIIDNotLogged: the ids ranks present on PMI_PORT appear nowhere in
// mpirun's trace log, which carries the orteds' logs too.
func TestPMIIDNotLogged(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	wrapper := "echo PMI_ID=$PMI_ID; unset PMI_FD; exec 3>&-; exec " + hello
	res := mpirun(t, c, "-np", "4", "--log-level", "trace", "sh", "-c", wrapper)
	if res.status != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var ids int
	for _, l := range lines(res.stdout) {
		if id, ok := strings.CutPrefix(l, "PMI_ID="); ok {
			ids++
			if id == "" || strings.Contains(res.stderr, id) {
				t.Errorf("PMI_ID %q is empty or in the log:\n%s", id, res.stderr)
			}
		}
	}
	if ids != 4 || !strings.Contains(res.stderr, "PMI_PORT") {
		t.Fatalf("%d ids, want 4; or the log does not show the ranks on PMI_PORT:\n%s", ids, res.stderr)
	}
}
