package e2e

import (
	"testing"

	"prsh/testbed"
)

// TestMPICHNameService: MPI_Publish_name, MPI_Lookup_name and
// MPI_Unpublish_name of an MPICH program reach mpirun's name service over
// PMI-1: a published name is found by every rank, on both nodes; a name
// taken, or withdrawn by a rank that did not publish it, is an MPI error
// at once; once withdrawn it is found no more.
func TestMPICHNameService(t *testing.T) {
	names := mpich(t, "pubnames")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 1})
	res := mpirun(t, c, "-np", "2", names)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{
		"rank 0 publish: ok",
		"rank 0 lookup: ok",
		"rank 1 lookup: ok",
		"rank 0 publish again: MPI_ERR_NAME", // MPICH's class for a failed publish too
		"rank 1 unpublish: MPI_ERR_SERVICE",
		"rank 0 unpublish: ok",
		"rank 0 lookup after: MPI_ERR_NAME",
		"rank 1 lookup after: MPI_ERR_NAME",
	})
}

// TestPMI2Spawn: Slurm's libpmi2 asks the orted for MPI_Comm_spawn's new
// job and for the name service over PMI-2. The spawn starts a child job
// of 2 ranks on the free slots: PMI2_Init tells them they were spawned,
// and the parent's preput is in their key-value space; a name rank 0
// publishes is found by every rank, and the job goes on to a normal end.
// With add-host the children run on a node the job did not have, and
// without it on the host of the list that got no rank. Without
// a free slot the spawn fails with mpirun's line, and the job goes on.
func TestPMI2Spawn(t *testing.T) {
	spawn := pmi2(t, "pmi2spawn")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	res := mpirun(t, c, "-np", "2", "--map-by", "node", spawn)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	spawned := []string{
		"rank 0 spawn: ok", "rank 0 publish: ok",
		"rank 0 lookup: ok port-of-rank-0", "rank 1 lookup: ok port-of-rank-0",
		"child 0: spawned 1, parent's port port-of-rank-0",
		"child 1: spawned 1, parent's port port-of-rank-0",
	}
	checkLines(t, res.stdout, spawned)

	res = mpirun(t, c, "-H", "node001:2", "-np", "2", spawn, "add-host=node002:2")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("add-host: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, spawned)

	res = mpirun(t, c, "-np", "2", spawn) // both parents on node001: node002, with no orted yet, takes the children
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("on a host with no rank: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, spawned)

	res = mpirun(t, c, "-np", "4", spawn)
	if res.status != 0 {
		t.Fatalf("no free slot: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{
		"rank 0 spawn: failed", "rank 0 publish: ok",
		"rank 0 lookup: ok port-of-rank-0", "rank 1 lookup: ok port-of-rank-0",
		"rank 2 lookup: ok port-of-rank-0", "rank 3 lookup: ok port-of-rank-0",
	})
	checkMpirunLines(t, res.stderr, `^mpirun: rank 0 asked for a child job: a child job of 2 ranks, but only 0 slots free \(node001: 0, node002: 0\); use --oversubscribe to allow it$`)
}
