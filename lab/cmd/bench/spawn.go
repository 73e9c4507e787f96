package main

// bench spawn: MPI_Comm_spawn from one rank, under our mpirun and Open
// MPI's, on the same testbed nodes in one run (issue 33).

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"prsh/testbed"

	"github.com/urfave/cli/v2"
)

//go:embed mpi/spawn.c
var spawnSource []byte

func spawnCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "spawn",
		Usage: "time MPI_Comm_spawn of 4, 16 and 64 children from one rank, ours against Open MPI's mpirun",
		Description: `Starts a cluster of --nodes nodes, each with enough slots for the
largest --children, and runs a one-rank Open MPI program (mpi/spawn.c)
that calls MPI_Comm_spawn for N children of itself, then merges the
intercommunicator and enters a barrier with them. The program reports
the time MPI_Comm_spawn took and the merge and barrier after it; bench
also times the whole launch. Each launcher (our mpirun and, with --uts,
Open MPI's) runs every N --runs times, alternating; the table has the
medians.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "nodes", Aliases: []string{"n"}, Value: 8, Usage: "nodes of the cluster"},
			&cli.StringFlag{Name: "children", Value: "4,16,64", Usage: "children per spawn, comma-separated"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions of every launch"},
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "give up on one launch after this long"},
			&cli.StringFlag{Name: "table", Usage: "write the markdown table to this file (it is printed anyway)"},
			// newBench reads these of launch's.
			&cli.BoolFlag{Name: "native", Hidden: true},
			&cli.StringSliceFlag{Name: "mpirun-arg", Hidden: true},
			&cli.StringSliceFlag{Name: "variant", Hidden: true},
			&cli.StringSliceFlag{Name: "peer", Hidden: true},
		}, clusterFlags()...),
		Action: func(c *cli.Context) error { return benchSpawnAction(c, std) },
	}
}

// spawnRow is one launcher's runs of one spawn size.
type spawnRow struct {
	launcher       string
	children       int
	spawn, barrier []float64 // as the program measured them (s)
	wall           []float64 // the whole launch (s)
	failure        string
}

func benchSpawnAction(c *cli.Context, std stdio) error {
	sizes, err := parseSizes(c.String("children"))
	if err != nil || c.Int("runs") < 1 || c.Int("nodes") < 2 {
		return errors.New("--children: want positive numbers, comma-separated; --runs at least 1; --nodes at least 2")
	}
	b, err := newBench(c, std, c.Int("nodes"))
	if err != nil {
		return err
	}
	defer b.close()
	b.env = append(b.env, driverEnv...) // Open MPI's: loopback, root
	prog, err := buildSpawner(b.cluster.Dir())
	if err != nil {
		return err
	}
	hostfile, err := b.spawnHostfile(slices.Max(sizes))
	if err != nil {
		return err
	}
	rows := b.spawnRows(prog, hostfile, sizes)
	table := spawnTable(rows)
	fmt.Fprint(std.out, table)
	if f := c.String("table"); f != "" {
		return os.WriteFile(f, []byte(table), 0o644)
	}
	return nil
}

func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// buildSpawner compiles mpi/spawn.c with Open MPI.
func buildSpawner(dir string) (string, error) {
	src, exe := filepath.Join(dir, "spawn.c"), filepath.Join(dir, "spawner")
	if err := os.WriteFile(src, spawnSource, 0o644); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if out, err := exec.Command("mpicc.openmpi", "-O2", "-o", exe, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: mpicc.openmpi %s: %v %s", src, err, strings.TrimSpace(string(out)))
	}
	return exe, nil
}

// spawnHostfile gives every node slots enough that the parent and the
// largest spawn fit without oversubscribing any.
func (b *bench) spawnHostfile(children int) (string, error) {
	nodes := b.cluster.Nodes()
	slots := (children + 1 + len(nodes) - 1) / len(nodes)
	var text strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&text, "%s slots=%d\n", n.Name, slots)
	}
	path := filepath.Join(b.cluster.Dir(), "hosts-spawn")
	return path, os.WriteFile(path, []byte(text.String()), 0o644)
}

// spawnArgv is each launcher's command line for one parent rank on the
// first node, spawning children.
func (b *bench) spawnArgv(prog, hostfile string, children int) map[string][]string {
	args := []string{"-np", "1", prog, strconv.Itoa(children)}
	argv := map[string][]string{}
	if mpirun, err := testbed.LookPath("mpirun", testbed.EnvValue(b.env, "PATH")); err == nil {
		argv["prsh"] = append([]string{mpirun, "--hostfile", hostfile, "--launch-agent", b.agent + " %h"}, args...)
	}
	if ompi := openMPILauncher(b.agent, b.c.Bool("uts")); ompi.unavailable == "" {
		line := ompi.argv(hostsFiles{slots: hostfile}, 1, 0)
		argv["ompi"] = append(line[:len(line)-3], args...) // without its -np 1 /bin/true
	}
	return argv
}

// spawnRows runs every launcher at every size, --runs times, alternating.
func (b *bench) spawnRows(prog, hostfile string, sizes []int) []spawnRow {
	var rows []spawnRow
	for _, n := range sizes {
		argv := b.spawnArgv(prog, hostfile, n)
		names := slices.Sorted(maps.Keys(argv))
		first := len(rows)
		for _, name := range names {
			rows = append(rows, spawnRow{launcher: name, children: n})
		}
		for range b.c.Int("runs") {
			for i, name := range names {
				b.spawnRun(&rows[first+i], argv[name])
			}
		}
	}
	return rows
}

var spawnReport = regexp.MustCompile(`spawned (\d+): spawn ([0-9.]+) s, merge\+barrier ([0-9.]+) s`)

// spawnRun runs one launch and keeps what it measured, or its failure.
func (b *bench) spawnRun(row *spawnRow, argv []string) {
	if row.failure != "" {
		return
	}
	var out bytes.Buffer
	b.stdout = &out
	defer func() { b.stdout = nil }()
	r, err := b.launchWatched(argv, nil)
	m := spawnReport.FindStringSubmatch(out.String())
	switch {
	case err != nil:
		row.failure = err.Error()
	case m == nil:
		row.failure = "no report in its output: " + strings.TrimSpace(lastLine(out.String()+"\n"))
	default:
		spawn, _ := strconv.ParseFloat(m[2], 64)
		barrier, _ := strconv.ParseFloat(m[3], 64)
		row.spawn, row.barrier, row.wall = append(row.spawn, spawn), append(row.barrier, barrier), append(row.wall, r.wall)
	}
}

func spawnTable(rows []spawnRow) string {
	var t strings.Builder
	t.WriteString("| children | launcher | runs | MPI_Comm_spawn s | merge + barrier s | whole launch s | failure |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&t, "| %d | %s | %d | %s | %s | %s | %s |\n", r.children, r.launcher, len(r.spawn),
			seconds(median(r.spawn), len(r.spawn)), seconds(median(r.barrier), len(r.barrier)), seconds(median(r.wall), len(r.wall)), r.failure)
	}
	return t.String()
}
