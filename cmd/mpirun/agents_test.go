package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"prsh/testbed"
	"prsh/topo"
)

// TestLaunchAgentCommand: --launch-agent runs the real OpenSSH client with
// the testbed's config, at every level of the tree.
func TestLaunchAgentCommand(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("needs the OpenSSH client")
	}
	c := cluster(t, testbed.Config{Nodes: 7})
	res := mpirun(t, c, "--spawn-degree", "2", "--launch-agent", "ssh -F "+c.SSHConfigPath()+" %h",
		"sh", "-c", `echo "$PRSH_RANK $PRSH_TESTBED_NODE"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	checkOnePerNode(t, c, res.stdout)
}

// TestLocalFork: with this host as the only node, orted is forked, not
// reached over ssh.
func TestLocalFork(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	res := mpirun(t, c, "-H", "localhost:3", "-np", "3", "sh", "-c", `echo "$PRSH_RANK $PRSH_NODE"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "0 localhost", "1 localhost", "2 localhost")
	if c.Sessions() != 0 {
		t.Errorf("%d ssh sessions for a local run", c.Sessions())
	}
}

// TestReportLaunchTimes: one line on stderr with the four milestones.
func TestReportLaunchTimes(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 5})
	res := mpirun(t, c, "--report-launch-times", "/bin/true")
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	s := `\d+\.\d{3}s`
	checkOneLine(t, res.stderr, `^mpirun: launch times: phase 1 \(daemons spawned\) `+s+
		`, phase 2 \(addresses exchanged\) `+s+`, ranks started `+s+`, ranks exited `+s+`$`)
}

// TestSpawnDegreeAuto: --spawn-degree auto spawns along the tree that
// topo.BestDegree picks for the nodes and the hints, and the job runs on
// every node.
func TestSpawnDegreeAuto(t *testing.T) {
	const nodes = 12
	want := topo.BestDegree(nodes, 100_000, 50_000)
	if want >= nodes {
		t.Fatalf("the rule picks δ=%d for %d nodes: flat, as the default would be; pick hints that make a tree", want, nodes)
	}
	c := cluster(t, testbed.Config{Nodes: nodes})
	res := mpirun(t, c, "--spawn-degree", "auto", "--spawn-hop-hint", "100ms", "--spawn-cost-hint", "50ms",
		"--log-level", "info", "sh", "-c", `echo "$PRSH_RANK $PRSH_TESTBED_NODE"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	checkOnePerNode(t, c, res.stdout)
	if !strings.Contains(res.stderr, fmt.Sprintf("chose=%d ", want)) {
		t.Errorf("mpirun did not say it chose δ=%d; stderr:\n%s", want, res.stderr)
	}
}
