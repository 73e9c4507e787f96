package e2e

import (
	"fmt"
	"os"
	"testing"

	"prsh/testbed"
)

// Connect/accept between jobs of one DVM (issue 33): Open MPI's
// MPI_Comm_accept and MPI_Comm_connect over our PMIx servers, their
// ports found through the name service at mpirun.

// connectLines is what the connect program's ranks print once the two
// sides, of na accepting and nc connecting ranks, talked.
func connectLines(na, nc int) (accept, connect []string) {
	for r := range na {
		accept = append(accept, fmt.Sprintf("accept rank %d: remote size %d sum %d", r, nc, nc*(nc+1)/2),
			fmt.Sprintf("accept rank %d: merged rank %d of %d sum %d", r, r, na+nc, (na+nc)*(na+nc-1)/2))
	}
	for r := range nc {
		connect = append(connect, fmt.Sprintf("connect rank %d: remote size %d sum %d", r, na, na*(na+1)/2),
			fmt.Sprintf("connect rank %d: merged rank %d of %d sum %d", r, na+r, na+nc, (na+nc)*(na+nc-1)/2))
	}
	accept = append(accept, "published svc-1", `accept rank 0: got "hello from connect rank 0"`)
	connect = append(connect, `connect rank 0: got "hello from accept rank 0"`)
	return accept, connect
}

// TestDVMConnectAccept: two Open MPI jobs submitted at once to a DVM of
// three nodes, mapped by node so that both span every node: one opens a
// port, publishes it and accepts, the other looks it up and connects;
// they exchange messages over the intercommunicator and the merged
// communicator, disconnect, and both end with 0.
func TestDVMConnectAccept(t *testing.T) {
	prog := openMPI(t, "connect")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 4, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c, dvmLog()...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the DVM's stderr:\n%s", dvmErr)
		}
	})
	marks := marksDir(t)
	acc, accOut, accErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "3", "--map-by", "node", prog, "accept", "svc-1")
	con, conOut, conErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "--map-by", "node", prog, "connect", "svc-1")
	wantAcc, wantCon := connectLines(3, 2)
	if st := waitExit(t, acc); st != 0 || accErr.String() != "" {
		t.Errorf("accepting job: exit %d, stderr:\n%s", st, accErr)
	}
	if st := waitExit(t, con); st != 0 || conErr.String() != "" {
		t.Errorf("connecting job: exit %d, stderr:\n%s", st, conErr)
	}
	checkLines(t, accOut.String(), wantAcc)
	checkLines(t, conOut.String(), wantCon)
	dvmStop(t, c, dvm, dvmErr, uri)
}

// dvmLog is the DVM's --log-level for a test run with PRSH_TEST_LOG set.
func dvmLog() []string {
	if l := os.Getenv("PRSH_TEST_LOG"); l != "" {
		return []string{"--log-level", l}
	}
	return nil
}
