package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"prsh/testbed"
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
