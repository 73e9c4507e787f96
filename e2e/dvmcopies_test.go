package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"prsh/testbed"
)

// TestDVMCopies: mpirun --dvm --cc runs a job once for each number, from
// one client. {cc} in the command line becomes the number; every copy's
// output comes whole (tagged as job N with --tag-output); copies run as
// the nodes' slots allow, never more
// ranks at once on a node than its slots; a failing copy is named with
// its status, which is mpirun's; Ctrl-C ends the running copies, starts
// no other and leaves none of their ranks running.
func TestDVMCopies(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2})
	dvm, dvmErr, uri := dvmUp(t, c)

	// Each rank marks itself running on its node, and counts the marks
	// of its node after a while: at most its 2 slots.
	marks := marksDir(t)
	count := `m="$MARKS/$PRSH_NODE.{cc}.$PRSH_RANK"; touch "$m"; sleep 0.3; n=$(ls "$MARKS" | grep -c "^$PRSH_NODE\."); rm "$m"; echo "copy {cc} rank $PRSH_RANK: $n running here"`
	client, stdout, stderr := dvmClient(t, c, marks, nil, "--dvm", uri, "--cc", "1-12", "-np", "2", "sh", "-c", count)
	if st := waitExit(t, client); st != 0 || stderr.String() != "" {
		t.Errorf("12 copies: status %d, stderr %q", st, stderr)
	}
	var want []string
	for n := 1; n <= 12; n++ {
		for r := range 2 {
			want = append(want, fmt.Sprintf("copy %d rank %d", n, r))
		}
	}
	var got []string
	for _, l := range lines(stdout.String()) {
		copyRank, running, _ := strings.Cut(l, ": ")
		got = append(got, copyRank)
		if running != "1 running here" && running != "2 running here" {
			t.Errorf("%q: more ranks at once than the node's 2 slots", l)
		}
	}
	wantSet(t, strings.Join(got, "\n"), want...)

	res := dvmRun(t, c, uri, "--cc", "0,7", "-np", "2", "--tag-output", "echo", "hi") // each copy's lines tagged as job {cc}
	if res.status != 0 {
		t.Errorf("tagged copies: status %d; stderr:\n%s", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "[0,0]<stdout>:hi", "[0,1]<stdout>:hi", "[7,0]<stdout>:hi", "[7,1]<stdout>:hi")

	res = dvmRun(t, c, uri, "--cc", "1-4", "-np", "1", "sh", "-c", `[ {cc} = 2 ] && exit 5; exit 0`)
	if res.status != 5 {
		t.Errorf("a failing copy: status %d, want 5; stderr:\n%s", res.status, res.stderr)
	}
	failed := regexp.MustCompile(`^mpirun: copy 2: node00[1-3]: rank 0 exited with status 5\nmpirun: 1 of 4 copies failed: 2 \(status 5\)\n$`)
	if !failed.MatchString(res.stderr) {
		t.Errorf("a failing copy: stderr %q, want it to match %s", res.stderr, failed)
	}

	// Ctrl-C while the 6 slots run copies: they end, the other 14 never start.
	client, _, stderr = dvmClient(t, c, marks, nil, "--dvm", uri, "--cc", "1-20", "-np", "1", "sh", "-c", `touch "$MARKS/c{cc}"; exec sleep 77`)
	awaitMarks(t, marks, "c1", "c2", "c3", "c4", "c5", "c6")
	client.Process.Signal(syscall.SIGINT)
	if st := waitExit(t, client); st != 130 {
		t.Errorf("interrupted copies: status %d, want 130; stderr:\n%s", st, stderr)
	}
	if !strings.Contains(stderr.String(), "mpirun: 6 of 20 copies failed: ") || !strings.Contains(stderr.String(), "; 14 not started") {
		t.Errorf("interrupted copies: stderr\n%s", stderr)
	}
	waitEscapeesGone(t, c, "interrupted copies")
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMCopiesSignals: Ctrl-Z stops every running copy's ranks, then
// the client, once; SIGCONT resumes them all; SIGUSR1 reaches every
// copy's ranks.
func TestDVMCopiesSignals(t *testing.T) {
	dvmClientSignals(t, testbed.Config{Nodes: 2, Slots: 2}, 4, "--cc", "0-3", "-np", "1", "sh", "-c",
		`trap 'exit 0' USR1; echo $$ > "$MARKS/{cc}.tmp"; mv "$MARKS/{cc}.tmp" "$MARKS/{cc}"; while :; do sleep 0.1; done`)
}
