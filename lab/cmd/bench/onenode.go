package main

// bench onenode: many ranks on this one host, under our mpirun, Hydra's
// mpiexec and Open MPI's mpirun side by side.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol/sim"
)

func oneNodeCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "onenode",
		Usage: "run N ranks of /bin/true and of an MPI barrier on this host with our mpirun, Hydra's and Open MPI's",
		Description: `For each --ranks N, runs N ranks on this host alone of /bin/true and of a
program that calls MPI_Init, MPI_Barrier and MPI_Finalize, built with
MPICH (ours and Hydra's mpiexec.hydra) and with Open MPI (ours and Open
MPI's mpirun), each as a user would type it (ours: mpirun -H localhost:N
-np N PROG; --pmix auto). Each launch runs --runs times, the launchers'
order rotated each repetition; the table has the median wall seconds,
the median CPU seconds of the whole process tree (a cgroup where one can
be made, else getrusage) and, from one more run watched every 20 ms, the
peak PSS of the launcher's own processes (every process of the tree but
the ranks), summed from /proc/PID/smaps_rollup.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "ranks", Aliases: []string{"n"}, Value: "16,64,256", Usage: "rank counts, comma-separated"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions of every launch"},
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "give up on one launch after this long"},
			&cli.StringFlag{Name: "table", Usage: "write the markdown table to this file (it is printed anyway)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log every launch's command line on stderr"},
		},
		Action: func(c *cli.Context) error { return benchOneNodeAction(c, std) },
	}
}

// oneNodeCase is one launcher running one program as N ranks here.
type oneNodeCase struct {
	launcher, program string
	argv              []string
}

// oneNodeResult is every run of one case.
type oneNodeResult struct {
	oneNodeCase
	ranks   int
	walls   []float64
	cpus    []float64
	pssKB   int
	failure string
}

// oneNodeCases are the launches of n ranks of each program: /bin/true
// under all three, each barrier build under ours and its own MPI's.
func oneNodeCases(mpirun string, programs map[string]string, n int) []oneNodeCase {
	np := strconv.Itoa(n)
	launchers := []struct {
		name     string
		argv     []string
		programs []string
	}{
		{"prsh", []string{mpirun, "-H", "localhost:" + np, "-np", np}, slurmPrograms},
		{"hydra", []string{"mpiexec.hydra", "-n", np}, []string{progTrue, progMPICH}},
		{"ompi", []string{"mpirun.openmpi", "--oversubscribe", "-np", np}, []string{progTrue, progOMPI}},
	}
	var cases []oneNodeCase
	for _, prog := range slurmPrograms {
		path, built := programPath(programs, prog)
		for _, l := range launchers {
			if !built || !slices.Contains(l.programs, prog) {
				continue
			}
			argv := append(slices.Clone(l.argv), path)
			if prog != progTrue {
				argv = append(argv, np) // the world's size it checks
			}
			cases = append(cases, oneNodeCase{l.name, prog, argv})
		}
	}
	return cases
}

func benchOneNodeAction(c *cli.Context, std stdio) error {
	sizes, err := sim.ParseSizes(c.String("ranks"))
	if err != nil {
		return fmt.Errorf("--ranks: %w", err)
	}
	dir, err := os.MkdirTemp("", "bench-onenode-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	mpirun := filepath.Join(filepath.Dir(exe), "mpirun")
	programs := buildBarriers(dir, std.err)
	b := &oneNodeBench{c: c, std: std, meter: newCPUMeter(false),
		env: append(append(os.Environ(), pathEnv()), driverEnv...)}
	defer b.meter.close()
	var results []oneNodeResult
	for _, n := range sizes {
		results = append(results, b.size(oneNodeCases(mpirun, programs, n), n)...)
	}
	table := oneNodeTable(results, b.meter.source())
	fmt.Fprint(std.out, table)
	if f := c.String("table"); f != "" {
		return os.WriteFile(f, []byte(table), 0o644)
	}
	return nil
}

// oneNodeBench runs the launches and measures them.
type oneNodeBench struct {
	c     *cli.Context
	std   stdio
	env   []string
	meter cpuMeter
}

// size runs every case of n ranks --runs times, rotating their order each
// repetition, then once more each for its memory.
func (b *oneNodeBench) size(cases []oneNodeCase, n int) []oneNodeResult {
	results := make([]oneNodeResult, len(cases))
	for i, c := range cases {
		results[i] = oneNodeResult{oneNodeCase: c, ranks: n}
	}
	for rep := range b.c.Int("runs") {
		for k := range cases {
			r := &results[(k+rep)%len(cases)]
			wall, cpu, _, err := b.run(r.argv, "")
			if err != nil {
				r.failure = err.Error()
				continue
			}
			r.walls, r.cpus = append(r.walls, wall), append(r.cpus, cpu)
		}
	}
	for i := range results {
		r := &results[i]
		_, _, pss, err := b.run(r.argv, r.program)
		if err != nil && r.failure == "" {
			r.failure = err.Error()
		}
		r.pssKB = pss
	}
	return results
}

// run runs one launch; with watched != "" it also samples the peak PSS of
// the tree's processes that are not the ranks (named watched, or true).
func (b *oneNodeBench) run(argv []string, watched string) (wall, cpu float64, pssKB int, err error) {
	sample, err := b.meter.start()
	if err != nil {
		return 0, 0, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Duration("timeout"))
	defer cancel()
	full := sample.wrap(argv)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	var stderr bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = b.env, io.Discard, &stderr, time.Second
	if b.c.Bool("verbose") {
		fmt.Fprintf(b.std.err, "bench: %s\n", strings.Join(argv, " "))
	}
	start := time.Now()
	if err = cmd.Start(); err == nil {
		done := make(chan struct{})
		peak := make(chan int, 1)
		go func() { peak <- watchPSS(cmd.Process.Pid, watched, done) }()
		err = cmd.Wait()
		close(done)
		pssKB = <-peak
	}
	wall = time.Since(start).Seconds()
	cpu = sample.stop()
	if err != nil {
		return wall, cpu, pssKB, fmt.Errorf("%s: %v: %s", filepath.Base(argv[0]), err, lastLine(stderr.String()))
	}
	return wall, cpu, pssKB, nil
}

// watchPSS samples, until done, the summed PSS of pid's process tree but
// the ranks, and returns its peak; nothing when rank is "".
func watchPSS(pid int, rank string, done <-chan struct{}) int {
	if rank == "" {
		return 0
	}
	rankComms := []string{filepath.Base(rank), "true"}
	peak := 0
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
		sum := 0
		for _, p := range processTree(pid) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); !slices.Contains(rankComms, strings.TrimSpace(string(comm))) {
				sum += pssOf(p)
			}
		}
		peak = max(peak, sum)
	}
}

// processTree is pid and its descendants, from /proc/*/stat.
func processTree(pid int) []int {
	children := map[int][]int{}
	stats, _ := os.ReadDir("/proc")
	for _, e := range stats {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// ppid is the second field after the command's closing parenthesis.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 {
			ppid, _ := strconv.Atoi(fields[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// pssOf is a process's PSS in kB, or 0 once it is gone.
func pssOf(pid int) int {
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(rollup), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	return 0
}

// oneNodeTable is the results as a markdown table.
func oneNodeTable(results []oneNodeResult, cpuSource string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| ranks | program | launcher | wall s (median, min–max) | CPU s (median, %s) | launcher PSS MB (peak) | failures |\n", cpuSource)
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		wall := "–"
		if len(r.walls) > 0 {
			wall = fmt.Sprintf("%.2f (%.2f–%.2f)", median(r.walls), slices.Min(r.walls), slices.Max(r.walls))
		}
		cpu := "–"
		if len(r.cpus) > 0 {
			cpu = fmt.Sprintf("%.2f", median(r.cpus))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.1f | %s |\n", r.ranks, r.program, r.launcher, wall, cpu,
			float64(r.pssKB)/1024, strings.ReplaceAll(r.failure, "|", "/"))
	}
	return b.String()
}
