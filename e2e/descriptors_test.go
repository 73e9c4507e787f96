package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"prsh/testbed"
)

// The shapes (ulimit -n 256 with 512 flat nodes, 1,024 ranks on
// a node) at a scale this machine runs: the limits are lowered in the
// same proportion. Go raises a process's soft limit to its hard one at
// start, so each test lowers both, as `ulimit -n` in a shell does.

// mpirunLimited runs mpirun with its open-files limit (soft and hard) at
// limit, and checks that nothing is left running afterwards.
func mpirunLimited(t *testing.T, c *testbed.Cluster, limit int, args ...string) result {
	t.Helper()
	n := strconv.Itoa(limit)
	res := runMpirun(t, "prlimit", append(os.Environ(), c.Env()...), append([]string{"--nofile=" + n + ":" + n, filepath.Join(bin, "mpirun")}, args...)...)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("mpirun %v left processes running: %+v", args, left)
	}
	return res
}

// limitedOrted is an orted whose open-files limit is limit, as a node's
// ssh server (or Slurm) may set it: a script that lowers it and runs the
// real one, for --orted.
func limitedOrted(t *testing.T, limit int) string {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "orted")
	text := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 1\nexec %s \"$@\"\n", limit, filepath.Join(bin, "orted"))
	if err := os.WriteFile(wrapper, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// TestDescriptorLimitMpirun: mpirun spawning 64 nodes flat, each an ssh
// session and a callback of its own, runs out of descriptors below about
// 150: the job ends at once in one line that names mpirun's limit,
// whether a session or a callback found the table full (a callback that
// could not be accepted used to stop mpirun's listener silently, and the
// job waited out the callback bound to blame a node). Above, it runs.
func TestDescriptorLimitMpirun(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 64, Slots: 1})
	flat := []string{"-np", "64", "--spawn-degree", "64", "true"}
	for _, limit := range []int{48, 96} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			res := mpirunLimited(t, c, limit, flat...)
			if res.status != 255 {
				t.Errorf("exit %d, want 255", res.status)
			}
			checkOneLine(t, res.stderr, `^mpirun: \S+: .*too many open files; the open-files limit of mpirun is reached \(ulimit -n `+strconv.Itoa(limit)+`\): raise it$`)
		})
	}
	res := mpirunLimited(t, c, 256, flat...)
	if res.status != 0 || res.stderr != "" {
		t.Errorf("at 256: exit %d, stderr:\n%s", res.status, res.stderr)
	}
}

// TestDescriptorLimitOrted: 48 ranks on one node, each with its pipes,
// its guard's and its PMI socket, need about 400 of its orted's
// descriptors: below that, a plain job and an MPICH program (PMI) end in
// one line of mpirun's naming the node, the rank that could not start
// and the orted's limit; the ranks already started are ended (MPICH's
// may say so in lines of their own). Above, they run.
func TestDescriptorLimitOrted(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 1, Slots: 48})
	programs := [][]string{{"sh", "-c", "sleep 1"}, {hello}}
	low, high := limitedOrted(t, 128), limitedOrted(t, 512)
	line := `^mpirun: node001: rank \d+: cannot run \S+: .*too many open files; the open-files limit of the orted on node001 is reached \(ulimit -n 128\): raise it$`
	for _, prog := range programs {
		t.Run(filepath.Base(prog[0]), func(t *testing.T) {
			res := mpirun(t, c, append([]string{"--orted", low, "-np", "48"}, prog...)...)
			if res.status != 255 {
				t.Errorf("exit %d, want 255", res.status)
			}
			checkMpirunLine(t, res.stderr, line)
			res = mpirun(t, c, append([]string{"--orted", high, "-np", "48"}, prog...)...)
			if res.status != 0 || res.stderr != "" {
				t.Errorf("at 512: exit %d, stderr:\n%s", res.status, res.stderr)
			}
		})
	}
}
