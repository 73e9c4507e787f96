package main

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol/sim"
	"prsh/testbed"
	"prsh/testbed/slurm"
)

//go:embed mpi/barrier.c
var barrierSource []byte

func slurmCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "slurm",
		Usage: "launch /bin/true and an MPI barrier on every node of a real Slurm allocation with our mpirun, Open MPI's, Hydra's and srun",
		Description: `Brings up a Slurm cluster (testbed/slurm: slurmctld and a slurmd per node
in private namespaces; root only) of the largest --nodes, and for each size
takes ONE allocation, salloc -N N --ntasks-per-node=1, in which a driver
script times every launch, one rank per node, --runs times, the order
rotated each repetition: our mpirun (as it starts its daemons by default,
and with --spawn-degree 2: a tree over one srun per edge), Open MPI's
mpirun, Hydra's mpiexec.mpich and srun alone, with /bin/true and with a
program that calls MPI_Init, MPI_Barrier and MPI_Finalize, built with
MPICH (ours, Hydra, srun --mpi=pmi2) and with Open MPI (ours, Open MPI,
srun --mpi=pmix). Wall seconds of each launch as the allocation's shell
sees them. A launch that exits non-zero, times out or leaves processes
running on the nodes counts as failed, and the table says why.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nodes", Aliases: []string{"n"}, Value: "8,32,64", Usage: "allocation sizes, comma-separated (the cluster has the largest)"},
			&cli.IntFlag{Name: "cpus", Value: 2, Usage: "CPUs of each node"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "repetitions of every launch per size"},
			&cli.BoolFlag{Name: goFloorFlag, Usage: goFloorUsage},
			&cli.DurationFlag{Name: "timeout", Value: 3 * time.Minute, Usage: "give up on one launch after this long"},
			&cli.StringFlag{Name: "csv", Usage: "write the results as CSV to this file"},
			&cli.StringFlag{Name: "table", Usage: "write the markdown table to this file (it is printed anyway)"},
			&cli.StringFlag{Name: "plot", Usage: "write a PNG of time against nodes, one line per launcher and program, to this file"},
		},
		Action: func(c *cli.Context) error { return benchSlurmAction(c, std) },
	}
}

func benchSlurmAction(c *cli.Context, std stdio) error {
	nodes, err := sim.ParseSizes(c.String("nodes"))
	if err != nil {
		return fmt.Errorf("--nodes: %w", err)
	}
	if c.Int("runs") < 1 || c.Duration("timeout") < time.Second {
		return errors.New("--runs: want at least 1; --timeout: at least 1s")
	}
	mpirun, err := testbed.LookPath("mpirun", strings.TrimPrefix(pathEnv(), "PATH="))
	if err != nil {
		return fmt.Errorf("our mpirun: %w (build it beside bench: make bench)", err)
	}
	if mpirun, err = filepath.Abs(mpirun); err != nil {
		return err
	}
	cluster, err := slurm.Start(slurm.Config{Nodes: slices.Max(nodes), CPUs: c.Int("cpus"), Shared: []string{filepath.Dir(mpirun)}})
	if err != nil {
		return err
	}
	b := &slurmBench{c: c, std: std, cluster: cluster, mpirun: mpirun, programs: buildBarriers(cluster.Dir(), std.err)}
	if c.Bool(goFloorFlag) {
		if b.floors, err = goFloorLaunchers(cluster.Dir(), filepath.Join(filepath.Dir(mpirun), "gostart")); err != nil {
			cluster.Close()
			return err
		}
	}
	var points []slurmPoint
	for _, n := range nodes {
		points = append(points, b.allocation(n)...)
	}
	if err := cluster.Close(); err != nil {
		fmt.Fprintf(std.err, "bench: %v\n", err)
	}
	return writeSlurmOutputs(c, std.out, points)
}

// buildBarriers compiles the barrier program with MPICH and with Open
// MPI into dir, which every node sees; a build that fails is left out,
// saying why.
func buildBarriers(dir string, log io.Writer) map[string]string {
	src := filepath.Join(dir, "barrier.c")
	if err := os.WriteFile(src, barrierSource, 0o644); err != nil {
		fmt.Fprintf(log, "bench: %v\n", err)
		return nil
	}
	built := map[string]string{}
	for _, b := range []struct{ prog, cc string }{{progMPICH, "mpicc.mpich"}, {progOMPI, "mpicc.openmpi"}} {
		exe := filepath.Join(dir, b.prog)
		if out, err := exec.Command(b.cc, "-O2", "-o", exe, src).CombinedOutput(); err != nil {
			fmt.Fprintf(log, "bench: %s with %s: %v %s\n", b.prog, b.cc, err, strings.TrimSpace(string(out)))
			continue
		}
		built[b.prog] = exe
	}
	return built
}

// slurmBench is the cluster and what bench slurm runs in it.
type slurmBench struct {
	c        *cli.Context
	std      stdio
	cluster  *slurm.Cluster
	mpirun   string
	programs map[string]string
	floors   []goFloorLauncher // --go-floor's
}

// allocation runs every case in one allocation of n nodes and gathers the
// results; runs the allocation did not make count as failed.
func (b *slurmBench) allocation(n int) []slurmPoint {
	cases := slurmCases(b.mpirun, b.programs, b.floors, n)
	for i := range cases {
		if _, err := exec.LookPath(cases[i].argv[0]); err != nil && cases[i].unavailable == "" {
			cases[i].unavailable = cases[i].argv[0] + " is not installed"
		}
	}
	results, err := b.drive(cases, n)
	if err != nil {
		fmt.Fprintf(b.std.err, "bench: %d nodes: %v\n", n, err)
	}
	return summarize(cases, n, append(results, unmade(cases, b.c.Int("runs"), results, err)...))
}

// unmade are the runs of available cases missing from results, failed
// with the allocation's error.
func unmade(cases []slurmCase, runs int, results []runResult, err error) []runResult {
	made := map[[2]int]bool{}
	for _, r := range results {
		made[[2]int{r.caseIndex, r.rep}] = true
	}
	why := "not run: the allocation ended"
	if err != nil {
		why += ": " + err.Error()
	}
	var out []runResult
	for i, c := range cases {
		for rep := range runs {
			if c.unavailable == "" && !made[[2]int{i, rep}] {
				out = append(out, runResult{caseIndex: i, rep: rep, failure: why})
			}
		}
	}
	return out
}

// drive writes the allocation's driver script, runs it under salloc and
// reads its result lines, checking after each run that nothing of it is
// left on any node before letting the driver go on.
func (b *slurmBench) drive(cases []slurmCase, n int) ([]runResult, error) {
	dir := b.cluster.Dir()
	errDir := filepath.Join(dir, "stderr-"+strconv.Itoa(n))
	script := filepath.Join(dir, fmt.Sprintf("driver-%d.sh", n))
	runs, timeout := b.c.Int("runs"), b.c.Duration("timeout")
	if err := os.MkdirAll(errDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(script, []byte(driverScript(cases, runs, timeout, errDir)), 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(b.std.out, "%d nodes: salloc -N %d --ntasks-per-node=1 sh %s\n", n, n, script)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs*len(cases))*(timeout+30*time.Second))
	defer cancel()
	cmd := b.cluster.Command(ctx, "salloc", "-Q", "-N", strconv.Itoa(n), "--ntasks-per-node=1", "sh", script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	results, readErr := b.readResults(stdout, stdin, cases, errDir, script)
	stdin.Close()
	err = errors.Join(readErr, cmd.Wait())
	if err != nil {
		err = fmt.Errorf("salloc: %w: %s", err, lastLine(stderr.String()))
	}
	return results, err
}

// readResults reads the driver's result lines, names each failed run's
// cause, and lets the driver go on once the run's processes are gone.
func (b *slurmBench) readResults(stdout io.Reader, goAhead io.Writer, cases []slurmCase, errDir, script string) ([]runResult, error) {
	var results []runResult
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		r, ok, err := parseResultLine(lines.Text())
		if err == nil && ok && r.caseIndex >= len(cases) {
			err = fmt.Errorf("driver: %q: no such case", lines.Text())
		}
		if err != nil {
			return results, err
		}
		if !ok {
			continue
		}
		r.failure = b.runFailure(r, errDir, script)
		c := cases[r.caseIndex]
		fmt.Fprintf(b.std.out, "  run %d  %-16s %-14s %7.3f s  %s\n", r.rep+1, c.label(), c.program, r.wall, r.failure)
		results = append(results, r)
		if _, err := io.WriteString(goAhead, "\n"); err != nil {
			return results, err
		}
	}
	return results, lines.Err()
}

// leftoverGrace is how long a run's processes (steps finishing, daemons
// exiting) may outlive it before they count as left running.
const leftoverGrace = 10 * time.Second

// runFailure says why a run failed: its exit status and the last line of
// its stderr, a timeout, or processes left running in the cluster (killed,
// so that they do not weigh on the next run). "" if it did not.
func (b *slurmBench) runFailure(r runResult, errDir, script string) string {
	var why string
	switch r.status {
	case 0:
	case 124: // timeout(1)'s
		why = fmt.Sprintf("no end after --timeout %v", b.c.Duration("timeout"))
	default:
		why = "exit " + strconv.Itoa(r.status)
		if text, err := os.ReadFile(filepath.Join(errDir, fmt.Sprintf("%d.%d", r.caseIndex, r.rep))); err == nil && len(strings.TrimSpace(string(text))) > 0 {
			why += ": " + lastLine(string(text))
		}
	}
	left := b.runLeftovers(script, leftoverGrace)
	if len(left) == 0 {
		return why
	}
	for _, p := range left {
		syscall.Kill(p.PID, syscall.SIGKILL)
	}
	where := orElse(left[0].Node, "slurmctl")
	return strings.TrimPrefix(fmt.Sprintf("%s; left %d processes running, e.g. on %s: %s", why, len(left), where, left[0].Cmdline), "; ")
}

// runLeftovers are the cluster's processes other than its daemons, salloc
// and the driver, once grace has passed or none is left.
func (b *slurmBench) runLeftovers(script string, grace time.Duration) []testbed.Proc {
	deadline := time.Now().Add(grace)
	for {
		var left []testbed.Proc
		for _, p := range b.cluster.Leftovers() {
			if p.Node != "" || !(strings.HasPrefix(p.Cmdline, "salloc ") || strings.Contains(p.Cmdline, script)) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// orElse is s, or otherwise if s is empty.
func orElse(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

func writeSlurmOutputs(c *cli.Context, out io.Writer, points []slurmPoint) error {
	table := markdownTable(points)
	fmt.Fprintf(out, "\n%s", table)
	if path := c.String("table"); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if path := c.String("csv"); path != "" {
		if err := testbed.WriteCSV(path, slurmRecords(points)); err != nil {
			return err
		}
	}
	if path := c.String("plot"); path != "" {
		title := fmt.Sprintf("one rank per node, one Slurm allocation per size: median of %d runs", c.Int("runs"))
		return savePlotLegendBeside(path, title, slurmSeries(points), true)
	}
	return nil
}
