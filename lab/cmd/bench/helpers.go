package main

// The cluster's flags as testbed run has them, and the PATH bench's
// launchers get. Lists and spawn degrees are read, and δ auto chosen, by
// the simulator's own functions (sim.ParseDegrees, Model.Degree), so the
// lab's model is testbed sim's.

import (
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

// clusterFlags are the flags of testbed run that shape the cluster launch
// starts.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "ssh-latency", Usage: "delay before each remote command starts"},
		&cli.DurationFlag{Name: "spawn-cost", Usage: "testbed-agent only: serial cost of each session at its spawner (back-to-back slots at each spawner, slept)"},
		&cli.BoolFlag{Name: "uts", Usage: "give each node's processes its own hostname (root only)"},
		&cli.StringSliceFlag{Name: "env", Usage: "K=V set in every node process (e.g. PRSH_CPUPROFILE=DIR with make bin CPUPROFILE=1)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log every launch's command line on stderr"},
	}
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
