package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol/sim"
	"prsh/testbed"
)

// clusterFlags are shared by run and up.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "nodes", Aliases: []string{"n"}, Value: 4, Usage: "number of virtual nodes (node001 …)"},
		&cli.IntFlag{Name: "slots", Value: 1, Usage: "slots per node in the hostfile"},
		&cli.DurationFlag{Name: "ssh-latency", Usage: "delay before each remote command starts"},
		&cli.DurationFlag{Name: "spawn-cost", Usage: "testbed-agent only: serial cost of each session at its spawner (back-to-back slots at each spawner, slept)"},
		&cli.BoolFlag{Name: "uts", Usage: "give each node's processes its own hostname (root only)"},
		&cli.StringFlag{Name: "dir", Usage: "write hostfile, ssh_config, keys here (default: a temporary dir)"},
		&cli.StringSliceFlag{Name: "refuse", Usage: "nodes that refuse connections (comma-separated)"},
		&cli.StringSliceFlag{Name: "hang", Usage: "nodes that accept TCP but never speak ssh"},
		&cli.StringSliceFlag{Name: "wrong-hostkey", Usage: "nodes whose host key is not in known_hosts"},
		&cli.StringSliceFlag{Name: "kill-after", Usage: "NODE=DURATION: SIGKILL the node's processes that long after its first session"},
		&cli.StringSliceFlag{Name: "drop-links-after", Usage: "NODE=DURATION: cut the node's TCP connections (not ssh) that long after its first session"},
		&cli.StringSliceFlag{Name: "max-startups", Usage: "NODE=N: the node's sshd drops connections beyond N in their handshake at once (OpenSSH's MaxStartups)"},
		&cli.StringSliceFlag{Name: "env", Usage: "K=V set in every node process (e.g. PRSH_CPUPROFILE=DIR with make bin CPUPROFILE=1)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log the testbed's status and every session on stderr"},
	}
}

// clusterFlagsNamed are the shared flags of these names, for commands
// that start a cluster their own way.
func clusterFlagsNamed(names ...string) []cli.Flag {
	var out []cli.Flag
	for _, f := range clusterFlags() {
		if slices.Contains(names, f.Names()[0]) {
			out = append(out, f)
		}
	}
	return out
}

// configFromFlags turns the shared flags into a testbed.Config.
func configFromFlags(c *cli.Context, stderr io.Writer) (testbed.Config, error) {
	cfg := testbed.Config{
		Nodes:      c.Int("nodes"),
		Slots:      c.Int("slots"),
		SSHLatency: c.Duration("ssh-latency"),
		SpawnCost:  c.Duration("spawn-cost"),
		UTS:        c.Bool("uts"),
		Dir:        c.String("dir"),
		Faults:     map[string]testbed.Fault{},
		Env:        append([]string{pathEnv()}, c.StringSlice("env")...),
	}
	if c.Bool("verbose") {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	}
	set := func(flag string, apply func(*testbed.Fault)) {
		for _, name := range sim.SplitList(c.StringSlice(flag)...) {
			f := cfg.Faults[name]
			apply(&f)
			cfg.Faults[name] = f
		}
	}
	set("refuse", func(f *testbed.Fault) { f.Refuse = true })
	set("hang", func(f *testbed.Fault) { f.Hang = true })
	set("wrong-hostkey", func(f *testbed.Fault) { f.WrongHostKey = true })
	timed := map[string]func(*testbed.Fault, time.Duration){
		"kill-after":       func(f *testbed.Fault, d time.Duration) { f.KillAfter = d },
		"drop-links-after": func(f *testbed.Fault, d time.Duration) { f.DropLinksAfter = d },
	}
	for flag, apply := range timed {
		for _, spec := range sim.SplitList(c.StringSlice(flag)...) {
			name, d, err := parseKillAfter(spec)
			if err != nil {
				return cfg, fmt.Errorf("--%s: %w", flag, err)
			}
			f := cfg.Faults[name]
			apply(&f, d)
			cfg.Faults[name] = f
		}
	}
	for _, spec := range sim.SplitList(c.StringSlice("max-startups")...) {
		name, n, err := parseMaxStartups(spec)
		if err != nil {
			return cfg, err
		}
		f := cfg.Faults[name]
		f.MaxStartups = n
		cfg.Faults[name] = f
	}
	return cfg, nil
}

func parseMaxStartups(spec string) (string, int, error) {
	name, ns, ok := strings.Cut(spec, "=")
	n, err := strconv.Atoi(ns)
	if !ok || name == "" || err != nil || n < 1 {
		return "", 0, fmt.Errorf("--max-startups %q: want NODE=N with N ≥ 1, e.g. node005=2", spec)
	}
	return name, n, nil
}

func parseKillAfter(spec string) (string, time.Duration, error) {
	name, ds, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return "", 0, fmt.Errorf("--kill-after %q: want NODE=DURATION, e.g. node005=2s", spec)
	}
	d, err := time.ParseDuration(ds)
	if err != nil || d <= 0 {
		return "", 0, fmt.Errorf("--kill-after %q: want a positive duration, e.g. node005=2s", spec)
	}
	return name, d, nil
}

// pathEnv puts the testbed's own directory first in PATH, because mpirun
// and orted are built beside it (bin/); it applies to CMD and to the nodes,
// as if the runtime were installed on every node.
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
