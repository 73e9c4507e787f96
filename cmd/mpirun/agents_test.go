package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// TestSessionsInTreeOrder: a spawner opens its sessions in the order of
// its children in the tree, those with subtrees first, whatever order its
// goroutines run in: the launch agent's processes, numbered in fork order,
// follow the nodes' order.
func TestSessionsInTreeOrder(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("needs the OpenSSH client")
	}
	const n = 16
	c := cluster(t, testbed.Config{Nodes: n})
	dir := t.TempDir()
	log, agent := filepath.Join(dir, "log"), filepath.Join(dir, "agent")
	script := fmt.Sprintf("#!/bin/sh\necho \"$$ $1\" >> %s\nexec ssh -F %s \"$@\"\n", log, c.SSHConfigPath())
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res := mpirun(t, c, "--spawn-degree", strconv.Itoa(n), "--launch-agent", agent+" %h", "/bin/true")
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	type session struct {
		pid  int
		host string
	}
	var sessions []session
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		pid, host, _ := strings.Cut(line, " ")
		p, _ := strconv.Atoi(pid)
		sessions = append(sessions, session{p, host})
	}
	slices.SortFunc(sessions, func(a, b session) int { return a.pid - b.pid })
	var hosts []string
	for _, s := range sessions {
		hosts = append(hosts, s.host)
	}
	var want []string
	for _, node := range c.Nodes() {
		want = append(want, node.Name)
	}
	if !slices.Equal(hosts, want) {
		t.Errorf("sessions in fork order %v, want %v", hosts, want)
	}
}
