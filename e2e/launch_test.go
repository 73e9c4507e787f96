package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"prsh/testbed"
	"prsh/topo"
)

// TestEveryNodeRunsOnce is the launch matrix: for every number of nodes,
// spawn degree and routing topology, each node runs the command exactly
// once and the job exits 0.
func TestEveryNodeRunsOnce(t *testing.T) {
	sizes := []int{1, 2, 7, 33, 100}
	if testing.Short() {
		sizes = []int{1, 7, 33}
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			c := cluster(t, testbed.Config{Nodes: n})
			for _, degree := range []int{0, 1, 2, 3, 32, n} {
				for _, rt := range []string{"radix", "binomial", "direct"} {
					name := fmt.Sprintf("degree=%d/routed=%s", degree, rt)
					t.Run(name, func(t *testing.T) {
						// A flat launch of 100 sessions under the suite's load can
						// take more than the default 10 s to start one command.
						res := mpirun(t, c, "--spawn-degree", strconv.Itoa(degree), "--routed", rt, "--ssh-connect-timeout", "60s",
							"sh", "-c", `echo "$PRSH_RANK $PRSH_TESTBED_NODE"`)
						if res.status != 0 {
							t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
						}
						checkOnePerNode(t, c, res.stdout)
					})
				}
			}
		})
	}
}

// checkOnePerNode checks that rank i ran on node i+1, once.
func checkOnePerNode(t *testing.T, c *testbed.Cluster, stdout string) {
	t.Helper()
	got := lines(stdout)
	sort.Strings(got)
	var want []string
	for i, n := range c.Nodes() {
		want = append(want, fmt.Sprintf("%d %s", i, n.Name))
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ranks ran as:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

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

func TestExitStatus(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	cases := []struct {
		name   string
		args   []string
		status int
		stderr string // regexp the one line must match; "" = no output
	}{
		{"all zero", []string{"/bin/true"}, 0, ""},
		{"rank exits 3", []string{"sh", "-c", `[ "$PRSH_RANK" = 1 ] && exit 3; sleep 30`}, 3,
			`^mpirun: node002: rank 1 exited with status 3$`},
		{"every rank exits 3", []string{"sh", "-c", "exit 3"}, 3, `^mpirun: node00[1-3]: rank [0-2] exited with status 3$`},
		{"rank killed by a signal", []string{"sh", "-c", `[ "$PRSH_RANK" = 2 ] && kill -SEGV $$; sleep 30`}, 128 + 11,
			`^mpirun: node003: rank 2 was killed by signal 11 \(SIGSEGV\)$`},
		{"command not found", []string{"no-such-command-xyz"}, 127,
			`^mpirun: node00[1-3]: rank [0-2]: cannot run no-such-command-xyz: executable file not found in \$PATH$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, tc.args...)
			if res.status != tc.status {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.status, tc.status, res.stderr)
			}
			checkOneLine(t, res.stderr, tc.stderr)
		})
	}
}

// TestSeveralRanksPerNode places ranks by slot and by node.
func TestSeveralRanksPerNode(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2})
	names := c.Nodes()
	n1, n2, n3 := names[0].Name, names[1].Name, names[2].Name
	cases := []struct {
		name string
		args []string
		want []string // node of each rank
	}{
		{"hostfile slots, by slot", []string{"-np", "6"}, []string{n1, n1, n2, n2, n3, n3}},
		{"hostfile slots, by node", []string{"-np", "5", "--map-by", "node"}, []string{n1, n2, n3, n1, n2}},
		{"-H with slots", []string{"-H", n1 + ":3," + n3, "-np", "4"}, []string{n1, n1, n1, n3}},
		{"npernode", []string{"--npernode", "2"}, []string{n1, n1, n2, n2, n3, n3}},
		{"oversubscribe", []string{"-np", "8", "--oversubscribe"}, []string{n1, n1, n2, n2, n3, n3, n1, n2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "sh", "-c", `echo "$PRSH_RANK $PRSH_TESTBED_NODE $PRSH_SIZE"`)
			res := mpirun(t, c, args...)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			got := lines(res.stdout)
			sort.Slice(got, func(i, j int) bool { return rankOf(got[i]) < rankOf(got[j]) })
			var want []string
			for r, node := range tc.want {
				want = append(want, strings.Join([]string{itoa(r), node, itoa(len(tc.want))}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("placement:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestTooManyRanks(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "-np", "3", "/bin/true")
	if res.status != statusUsage {
		t.Errorf("exit %d, want %d", res.status, statusUsage)
	}
	checkOneLine(t, res.stderr, `^mpirun: .*-np 3 exceeds the 2 slots.*--oversubscribe`)
}

// TestPortRange: with --port-range (or Hydra's MPIEXEC_PORT_RANGE),
// mpirun and every orted listen on ports of the range, as a firewall
// that opens only those needs; a range with no free port ends the job
// naming it.
func TestPortRange(t *testing.T) {
	probe, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lo := min(probe.Addr().(*net.TCPAddr).Port, 65535-20)
	probe.Close()
	hi := lo + 20
	c := cluster(t, testbed.Config{Nodes: 3})
	// Along a chain each orted's address is in its child's argv, which
	// -v logs.
	res := mpirun(t, c, "-v", "--spawn-degree", "1", "--port-range", fmt.Sprintf("%d-%d", lo, hi), "true")
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`--parent tcp://([0-9.]+):(\d+)`).FindAllStringSubmatch(res.stderr, -1) {
		port, _ := strconv.Atoi(m[2])
		if port < lo || port > hi {
			t.Errorf("a daemon listens at %s:%s, outside %d-%d", m[1], m[2], lo, hi)
		}
		seen[m[1]] = true
	}
	if len(seen) != 3 { // mpirun's, node001's and node002's
		t.Errorf("%d daemons' addresses logged, want 3:\n%s", len(seen), res.stderr)
	}

	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	t.Setenv("MPIEXEC_PORT_RANGE", fmt.Sprintf("%d:%d", port, port))
	res = mpirun(t, c, "--listen-ip", "127.0.0.1", "true")
	if res.status != 255 {
		t.Errorf("no free port: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, fmt.Sprintf(`^mpirun: \S+: cannot listen on "127.0.0.1": no free port in %d-%d on 127.0.0.1$`, port, port))
}
