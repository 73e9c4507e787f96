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
	"golang.org/x/sys/unix"

	"prsh/daemon/protocol/sim"
)

func oneNodeCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "onenode",
		Usage: "run N ranks of /bin/true and of an MPI barrier on this host (or N a node on --nodes testbed nodes) with our mpirun, Hydra's and Open MPI's",
		Description: `For each --ranks N, runs N ranks on this host alone of /bin/true and of a
program that calls MPI_Init, MPI_Barrier and MPI_Finalize, built with
MPICH (ours and Hydra's mpiexec.hydra) and with Open MPI (ours and Open
MPI's mpirun), each as a user would type it (ours: mpirun -H localhost:N
-np N PROG; --pmix auto). Each launch runs --runs times, the launchers'
order rotated each repetition; the table has the median wall seconds,
the median CPU seconds of the whole process tree (a cgroup where one can
be made, else getrusage) and, from one more run watched every 20 ms, the
peak PSS of the launcher's own processes (every process of the tree but
the ranks), summed from /proc/PID/smaps_rollup.

With --nodes M above 1 it starts a testbed cluster of M nodes instead
and runs N ranks on each of them (M×N in all), every launcher through
testbed-agent: ours with a hostfile of N slots a node, Hydra's with
-launcher rsh, Open MPI's with its plm_rsh_agent (needs --uts). The PSS
column is then the launchers' peak over the whole cluster (mpirun or
mpiexec, the daemons or proxies, the agents) divided by M: per node.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "ranks", Aliases: []string{"n"}, Value: "16,64,256", Usage: "rank counts (a node, with --nodes), comma-separated"},
			&cli.IntFlag{Name: "nodes", Value: 1, Usage: "testbed nodes to run the ranks on, N on each; 1: this host, no testbed"},
			// newBench reads these of launch's.
			&cli.BoolFlag{Name: "native", Hidden: true},
			&cli.StringSliceFlag{Name: "mpirun-arg", Hidden: true},
			&cli.StringSliceFlag{Name: "variant", Hidden: true},
			&cli.StringSliceFlag{Name: "peer", Hidden: true},
			&cli.BoolFlag{Name: "peers", Hidden: true},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions of every launch"},
			&cli.BoolFlag{Name: goFloorFlag, Usage: goFloorUsage},
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "give up on one launch after this long"},
			&cli.StringFlag{Name: "table", Usage: "write the markdown table to this file (it is printed anyway)"},
		}, clusterFlags()...),
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
	nodes   int
	ranks   int // a node
	walls   []float64
	cpus    []float64
	pssKB   int
	failure string
}

// programLauncher is a launcher's command line up to the program, and
// the programs it runs.
type programLauncher struct {
	name     string
	argv     []string
	programs []string
}

// oneNodeCases are the launches of n ranks of each program: /bin/true
// under all three, each barrier build under ours and its own MPI's; then
// Hydra's Go floors.
func oneNodeCases(mpirun string, programs map[string]string, floors []goFloorLauncher, n int) []oneNodeCase {
	np := strconv.Itoa(n)
	return casesOf(append([]programLauncher{
		{"prsh", []string{mpirun, "-H", "localhost:" + np, "-np", np}, slurmPrograms},
		{"hydra", []string{"mpiexec.hydra", "-n", np}, []string{progTrue, progMPICH}},
		{"ompi", []string{"mpirun.openmpi", "--oversubscribe", "-np", np}, []string{progTrue, progOMPI}},
	}, floorsLike(floors, "-n", np)...), programs, np)
}

// floorsLike are the Go floors with Hydra's options hydra.
func floorsLike(floors []goFloorLauncher, hydra ...string) []programLauncher {
	var launchers []programLauncher
	for _, f := range floors {
		launchers = append(launchers, programLauncher{f.name, f.command(hydra...), goFloorPrograms})
	}
	return launchers
}

// manyNodeCases are oneNodeCases over the testbed's first nodes, n
// ranks on each, every launcher through the testbed's agent.
func manyNodeCases(tb *bench, programs map[string]string, floors []goFloorLauncher, nodes, n int) ([]oneNodeCase, error) {
	h, err := tb.hostfilesOf(nodes, n)
	if err != nil {
		return nil, err
	}
	np := strconv.Itoa(nodes * n)
	mpirun := tb.ours[0].argv(h, nodes, 0)[0]
	launchers := []programLauncher{
		{"prsh", []string{mpirun, "--hostfile", h.slots, "--launch-agent", tb.agent + " %h", "-np", np}, slurmPrograms},
		{"hydra", []string{"mpiexec.hydra", "-launcher", "rsh", "-launcher-exec", tb.agent, "-f", h.counted, "-n", np}, []string{progTrue, progMPICH}},
	}
	launchers = append(launchers, floorsLike(floors, "-launcher", "rsh", "-launcher-exec", tb.agent, "-f", h.counted, "-n", np)...)
	if ompi := openMPILauncher(tb.agent, tb.c.Bool("uts")); ompi.unavailable == "" {
		argv := ompi.argv(h, nodes*n, 0)
		launchers = append(launchers, programLauncher{"ompi", argv[:len(argv)-1], []string{progTrue, progOMPI}}) // without its /bin/true
	}
	return casesOf(launchers, programs, np), nil
}

// casesOf runs each program that was built under each launcher that
// runs it; an MPI program is told the world's size np, which it checks.
func casesOf(launchers []programLauncher, programs map[string]string, np string) []oneNodeCase {
	var cases []oneNodeCase
	for _, prog := range slurmPrograms {
		path, built := programPath(programs, prog)
		for _, l := range launchers {
			if !built || !slices.Contains(l.programs, prog) {
				continue
			}
			argv := append(slices.Clone(l.argv), path)
			if prog != progTrue {
				argv = append(argv, np)
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
	nodes := max(c.Int("nodes"), 1)
	dir, err := os.MkdirTemp("", "bench-onenode-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	mpirun := filepath.Join(filepath.Dir(exe), "mpirun")
	programs := buildBarriers(dir, std.err)
	var floors []goFloorLauncher
	if c.Bool(goFloorFlag) {
		if floors, err = goFloorLaunchers(dir, filepath.Join(filepath.Dir(exe), "gostart")); err != nil {
			return err
		}
	}
	b := &oneNodeBench{c: c, std: std, meter: newCPUMeter(false),
		env: append(append(os.Environ(), pathEnv()), driverEnv...)}
	var tb *bench
	if nodes > 1 {
		if tb, err = newBench(c, std, nodes); err != nil {
			return err
		}
		defer tb.close()
		b.meter, b.env = tb.meter, append(tb.env, driverEnv...)
	} else {
		defer b.meter.close()
	}
	var results []oneNodeResult
	for _, n := range sizes {
		cases := oneNodeCases(mpirun, programs, floors, n)
		if tb != nil {
			if cases, err = manyNodeCases(tb, programs, floors, nodes, n); err != nil {
				return err
			}
		}
		results = append(results, b.size(cases, nodes, n)...)
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
func (b *oneNodeBench) size(cases []oneNodeCase, nodes, n int) []oneNodeResult {
	results := make([]oneNodeResult, len(cases))
	for i, c := range cases {
		results[i] = oneNodeResult{oneNodeCase: c, nodes: nodes, ranks: n}
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
		r.pssKB = pss / nodes
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
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.pid))
			if !slices.Contains(rankComms, strings.TrimSpace(string(comm))) && !sharesMemory(p.ppid, p.pid) {
				sum += pssOf(p.pid)
			}
		}
		peak = max(peak, sum)
	}
}

// treeProc is a process and its parent.
type treeProc struct{ pid, ppid int }

// processTree is pid and its descendants, from /proc/*/stat.
func processTree(pid int) []treeProc {
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
	tree := []treeProc{{pid: pid}}
	for i := 0; i < len(tree); i++ {
		for _, c := range children[tree[i].pid] {
			tree = append(tree, treeProc{c, tree[i].pid})
		}
	}
	return tree
}

// sharesMemory says whether a and b are one memory space (kcmp's
// KCMP_VM): a child between a vfork and its exec, as a guard's starts
// are, is its parent's memory, not memory of its own, and counted twice
// would add a guard's PSS a start under way.
func sharesMemory(a, b int) bool {
	const kcmpVM = 1 // linux/kcmp.h: KCMP_FILE, KCMP_VM, ...
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpVM, 0, 0, 0)
	return errno == 0 && r == 0
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
	fmt.Fprintf(&b, "| nodes × ranks | program | launcher | wall s (median, min–max) | CPU s (median, %s) | launcher PSS MB a node (peak) | failures |\n", cpuSource)
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
		fmt.Fprintf(&b, "| %d × %d | %s | %s | %s | %s | %.1f | %s |\n", r.nodes, r.ranks, r.program, r.launcher, wall, cpu,
			float64(r.pssKB)/1024, strings.ReplaceAll(r.failure, "|", "/"))
	}
	return b.String()
}
