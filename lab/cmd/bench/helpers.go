package main

// Copies of cmd/testbed's own helpers (a command's package main cannot be
// imported): the flags and lists read as testbed reads them, and δ auto
// chosen as testbed sim chooses it, so the lab's model is the simulator's.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol/sim"
	"prsh/topo"
)

// clusterFlags are the flags of testbed run that shape the cluster launch
// starts.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "ssh-latency", Usage: "delay before each remote command starts"},
		&cli.DurationFlag{Name: "spawn-cost", Usage: "testbed-agent only: serial cost of each session at its spawner (back-to-back slots at each spawner, slept)"},
		&cli.BoolFlag{Name: "uts", Usage: "give each node's processes its own hostname (root only)"},
		&cli.StringSliceFlag{Name: "env", Usage: "K=V set in every node process (e.g. PRSH_CPUPROFILE=DIR)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log every launch's command line on stderr"},
	}
}

// splitList flattens repeated and comma-separated values, dropping blanks.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// intList reads a comma-separated list of positive numbers.
func intList(s string) ([]int, error) { return positiveList(s, false) }

// degreeList reads spawn degrees: positive numbers, flat or auto.
func degreeList(s string) ([]int, error) { return positiveList(s, true) }

func positiveList(s string, flatToo bool) ([]int, error) {
	var out []int
	for _, f := range splitList([]string{s}) {
		if f == "flat" && flatToo {
			out = append(out, flat)
			continue
		}
		if f == "auto" && flatToo {
			out = append(out, auto)
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// flat is the spawn degree of a flat launch: mpirun spawns every orted;
// auto the one topo.BestDegree picks for the node count and the costs.
const (
	flat = 0
	auto = -1
)

// degreeOf is the spawn degree of a run on n nodes with the costs of m.
func degreeOf(d, n int, m sim.Model) int {
	switch d {
	case flat:
		return n
	case auto:
		return autoDegree(n, m)
	}
	return d
}

// autoDegree is mpirun's --spawn-degree auto for the model's costs: a hop
// is the session's latency, the orted's start-up and CPU and its
// callback; a session's cost at its spawner is at least its latency
// shared by the sessions it may open at once.
func autoDegree(n int, m sim.Model) int {
	hop := m.SSHLatency + m.Startup + m.OrtedStartCPU(n) + m.Latency
	cost := m.SpawnCost
	if m.MaxSessions > 0 {
		cost = max(cost, m.SSHLatency/int64(m.MaxSessions))
	}
	return topo.BestDegree(n, hop, cost)
}

func degreeName(d int) string {
	switch d {
	case flat:
		return "flat"
	case auto:
		return "auto"
	}
	return strconv.Itoa(d)
}

// degreeLabel names a run's degree, with the one auto chose.
func degreeLabel(d, chosen int) string {
	if d == auto {
		return fmt.Sprintf("auto(%d)", chosen)
	}
	return degreeName(d)
}

// pathEnv puts bench's own directory first in PATH, because mpirun, orted
// and testbed-agent are built beside it (bin/); it applies to the
// launchers and to the nodes, as if the runtime were installed on every
// node.
func pathEnv() string {
	path := os.Getenv("PATH")
	exe, err := os.Executable()
	if err != nil {
		return "PATH=" + path
	}
	if path == "" {
		return "PATH=" + filepath.Dir(exe)
	}
	return "PATH=" + filepath.Dir(exe) + string(os.PathListSeparator) + path
}

// lookPath resolves name in the PATH the launchers get, which has bench's
// directory first, unlike bench's own PATH that exec.LookPath uses.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// envValue returns the last value of key in env, the one exec would use.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
