package main

// bench dvm: small jobs through a DVM (mpirun --dvm-start, then
// mpirun --dvm), one after another and many at once, beside a fresh
// mpirun, Hydra's mpiexec and Open MPI's mpirun of the same jobs, and
// beside what this machine can fork, exec and reap.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/testbed"
)

func dvmCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "dvm",
		Usage: "small jobs through a DVM, one after another and 64 at a time, beside fresh launches and this machine's fork/exec/reap limit",
		Description: `Starts a cluster of --nodes nodes and measures, for each launcher and
program, the latency of a job with one rank per node and of a job of
one rank on the first node, --jobs jobs of each one after another
(median and 99th percentile wall seconds), and the throughput of
one-rank jobs, --throughput jobs with --at-once of them running at any
time (jobs a second): from a client each, and from one client
(mpirun --dvm --cc) on --at-once slots. The programs: /bin/true and, with --mpi (the
default), MPI_Init, MPI_Barrier and MPI_Finalize built with MPICH and
with Open MPI. The launchers: a DVM of ours (mpirun --dvm-start over the
nodes, through testbed-agent, then mpirun --dvm URI per job), a fresh
mpirun of ours per job, and with --peers Hydra's mpiexec (MPICH) and
Open MPI's mpirun (ORTE, --uts), fresh too; the fresh ones run
--fresh-jobs jobs of each kind (they take hundreds of milliseconds
each). The limit: a Go loop that runs /bin/true --throughput times,
--at-once at a time, in the same run; the table gives each throughput's
ratio to it. The issue's goals (issue 31): a DVM job 20 times faster
than a fresh mpirun on 16 nodes; one-rank throughput at least half the
limit; the lines under the table say how far this run is.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "nodes", Aliases: []string{"n"}, Value: 16, Usage: "nodes of the cluster, one rank on each in the latency jobs"},
			&cli.IntFlag{Name: "jobs", Value: 200, Usage: "latency jobs through the DVM, one after another"},
			&cli.IntFlag{Name: "throughput", Value: 1000, Usage: "one-rank jobs through the DVM, and runs of the limit's loop"},
			&cli.IntFlag{Name: "at-once", Value: 64, Usage: "jobs running at any time in the throughput runs"},
			&cli.IntFlag{Name: "fresh-jobs", Value: 20, Usage: "jobs of each kind by each fresh launcher"},
			&cli.BoolFlag{Name: "mpi", Value: true, Usage: "also an MPI job: MPI_Init, MPI_Barrier, MPI_Finalize built with MPICH and with Open MPI"},
			&cli.BoolFlag{Name: "peers", Usage: "also Hydra's mpiexec and Open MPI's mpirun (needs --uts)"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "give up on one job after this long"},
			&cli.StringFlag{Name: "table", Usage: "write the markdown tables to this file (they are printed anyway)"},
			// newBench reads these of launch's.
			&cli.BoolFlag{Name: "native", Hidden: true},
			&cli.StringSliceFlag{Name: "mpirun-arg", Hidden: true},
			&cli.StringSliceFlag{Name: "variant", Hidden: true},
			&cli.StringSliceFlag{Name: "peer", Hidden: true},
		}, clusterFlags()...),
		Action: func(c *cli.Context) error { return benchDVMAction(c, std) },
	}
}

// dvmRow is one launcher's measurements of one program.
type dvmRow struct {
	launcher, program string
	wide, one         []float64 // latencies (s): one rank on every node, one rank on one node
	perSecond         float64   // one-rank jobs a second, --at-once at a time; 0: not measured
	// copiesPerSecond: one-rank jobs a second from one client (--cc),
	// on --at-once slots; 0: not measured.
	copiesPerSecond float64
	jobs            int // of the throughput run
	// cpu is a DVM job's CPU seconds, one rank per node and one rank:
	// the DVM's side (mpirun, the orteds, the guards and the ranks they
	// reaped) and the client; nil for a fresh launcher.
	cpu     *[2]dvmCPU
	failure string
}

// dvmCPU is the CPU a job of the DVM's side and of its client.
type dvmCPU struct{ side, client float64 }

// dvmPeerPrograms are the programs each peer runs: its own MPI's barrier
// (ours runs every program).
var dvmPeerPrograms = map[string][]string{"hydra": {progTrue, progMPICH}, "ompi": {progTrue, progOMPI}}

func benchDVMAction(c *cli.Context, std stdio) error {
	if c.Int("jobs") < 1 || c.Int("throughput") < 1 || c.Int("at-once") < 1 || c.Int("fresh-jobs") < 1 {
		return errors.New("--jobs, --throughput, --at-once and --fresh-jobs: want at least 1")
	}
	b, err := newBench(c, std, c.Int("nodes"))
	if err != nil {
		return err
	}
	defer b.close()
	b.env = append(b.env, driverEnv...) // Open MPI's: loopback, root
	programs := map[string]string{}
	if c.Bool("mpi") {
		programs = buildBarriers(b.cluster.Dir(), std.err)
	}
	limit := forkLimit(c.Int("throughput"), c.Int("at-once"))
	rows, err := b.dvmRows(programs)
	if err != nil {
		return err
	}
	return writeDVMTables(c, std.out, limit, rows)
}

// dvmRows measures the fresh launchers first, then the DVM: a fresh
// launch waits for the nodes to be empty, which they are not while the
// DVM is up. programs holds the barrier's builds.
func (b *bench) dvmRows(programs map[string]string) ([]dvmRow, error) {
	n := b.c.Int("nodes")
	all, err := b.hostfiles(n)
	if err != nil {
		return nil, err
	}
	one, err := b.hostfiles(1)
	if err != nil {
		return nil, err
	}
	var rows []dvmRow
	mpiPeers := slices.DeleteFunc(slices.Clone(b.peers), func(l launcher) bool { return dvmPeerPrograms[l.name] == nil })
	fresh := b.c.Int("fresh-jobs")
	for _, prog := range dvmPrograms(programs) {
		path, _ := programPath(programs, prog)
		for _, l := range append([]launcher{b.ours[0]}, mpiPeers...) {
			if peer := dvmPeerPrograms[l.name]; peer != nil && !slices.Contains(peer, prog) {
				continue
			}
			row := dvmRow{launcher: l.name + ", fresh", program: prog, failure: l.unavailable, jobs: fresh}
			if row.failure == "" {
				b.measureDVM(&row, withProgram(l.argv(all, n, n), path, n), withProgram(l.argv(one, 1, 1), path, 1), fresh, nil)
			}
			rows = append(rows, row)
		}
	}
	// The copies of one client run as many at a time as the slots.
	slotted, err := b.hostfilesOf(n, (b.c.Int("at-once")+n-1)/n)
	if err != nil {
		return nil, err
	}
	uri, stop, sideCPU, err := b.startDVM(all.slots)
	if err != nil {
		return nil, err
	}
	mpirun := b.ours[0].argv(all, n, n)[0]
	for _, prog := range dvmPrograms(programs) {
		path, _ := programPath(programs, prog)
		row := dvmRow{launcher: "prsh, DVM", program: prog, jobs: b.c.Int("throughput"), cpu: &[2]dvmCPU{}}
		b.measureDVM(&row, withProgram([]string{mpirun, "--dvm", uri, "-np", strconv.Itoa(n), path}, path, n),
			withProgram([]string{mpirun, "--dvm", uri, "-np", "1", path}, path, 1), b.c.Int("jobs"), sideCPU)
		if row.failure == "" {
			row.copiesPerSecond, row.failure = b.copies(withProgram([]string{mpirun, "--dvm", uri, "--hostfile", slotted.slots,
				"--cc", "1-" + strconv.Itoa(row.jobs), "-np", "1", path}, path, 1), row.jobs)
		}
		rows = append(rows, row)
	}
	if err := stop(); err != nil {
		rows[len(rows)-1].failure = err.Error()
	}
	return rows, nil
}

// dvmPrograms are /bin/true and the barrier's builds there are.
func dvmPrograms(programs map[string]string) []string {
	return slices.DeleteFunc(slices.Clone(slurmPrograms), func(p string) bool {
		_, built := programPath(programs, p)
		return !built
	})
}

// withProgram is a launcher's argv, which ends in /bin/true, running
// path instead; the barrier is told the world's size np, which it checks.
func withProgram(argv []string, path string, np int) []string {
	argv = append(slices.Clone(argv[:len(argv)-1]), path)
	if path != "/bin/true" {
		argv = append(argv, strconv.Itoa(np))
	}
	return argv
}

// measureDVM runs latency jobs of wide and of one, one after another,
// then row.jobs of one, --at-once at a time, into row; the first failure
// ends it. sideCPU, for a DVM, reads its side's CPU seconds so far.
func (b *bench) measureDVM(row *dvmRow, wide, one []string, latency int, sideCPU func() float64) {
	for i, kind := range []struct {
		argv  []string
		walls *[]float64
	}{{wide, &row.wide}, {one, &row.one}} {
		side, client := 0.0, childrenCPU()
		if sideCPU != nil {
			side = sideCPU()
		}
		for range latency {
			start := time.Now()
			if err := b.job(kind.argv); err != nil {
				row.failure = err.Error()
				return
			}
			*kind.walls = append(*kind.walls, time.Since(start).Seconds())
		}
		if sideCPU != nil {
			row.cpu[i] = dvmCPU{(sideCPU() - side) / float64(latency), (childrenCPU() - client) / float64(latency)}
		}
	}
	perSecond, err := b.atOnce(one, row.jobs)
	if err != nil {
		row.failure = err.Error()
		return
	}
	row.perSecond = perSecond
}

// copies runs argv, one client's copies of a one-rank job, and returns
// the jobs a second, or the failure.
func (b *bench) copies(argv []string, jobs int) (float64, string) {
	start := time.Now()
	if err := b.job(argv); err != nil {
		return 0, err.Error()
	}
	return float64(jobs) / time.Since(start).Seconds(), ""
}

// childrenCPU is the CPU seconds of the children this process reaped:
// the clients.
func childrenCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// dvmSideCPU is the CPU seconds so far of the DVM's side: its mpirun
// (root) and every process on the nodes (the orteds, the guards), with
// the children they reaped (the ranks).
func dvmSideCPU(cl *testbed.Cluster, root int) float64 {
	var ticks int64
	for _, p := range append(cl.Leftovers(), testbed.Proc{PID: root}) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // the state first: utime is the 12th
		for _, field := range f[11:min(15, len(f))] {            // utime, stime, cutime, cstime
			n, _ := strconv.ParseInt(field, 10, 64)
			ticks += n
		}
	}
	return float64(ticks) / 100 // USER_HZ
}

// job runs one job to its end; a failure or a hang is an error naming
// the launcher and its last line.
func (b *bench) job(argv []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Duration("timeout"))
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	// The copy of its stderr may lag its exit by more than a second when
	// 64 clients' MPI ranks spin on two CPUs: a pipe left open is still
	// caught, later.
	cmd.Env, cmd.Stderr, cmd.WaitDelay = b.env, &stderr, 10*time.Second
	if b.c.Bool("verbose") {
		fmt.Fprintf(b.std.err, "bench: %s\n", strings.Join(argv, " "))
	}
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: no end after --timeout %v", filepath.Base(argv[0]), b.c.Duration("timeout"))
	case err != nil:
		return fmt.Errorf("%s: %v: %s", filepath.Base(argv[0]), err, lastLine(stderr.String()))
	}
	return nil
}

// atOnce runs total jobs of argv, --at-once at a time, and returns the
// jobs a second.
func (b *bench) atOnce(argv []string, total int) (float64, error) {
	return concurrently(total, b.c.Int("at-once"), func() error { return b.job(argv) })
}

// forkLimit is what this machine forks, execs and reaps a second:
// /bin/true total times, atOnce at a time, from a Go loop.
func forkLimit(total, atOnce int) float64 {
	perSecond, _ := concurrently(total, atOnce, func() error { return exec.Command("/bin/true").Run() })
	return perSecond
}

// concurrently runs f total times, atOnce at a time, and returns the
// runs a second, or the first error.
func concurrently(total, atOnce int, f func() error) (float64, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	slots := make(chan struct{}, atOnce)
	start := time.Now()
	for range total {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := f(); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds(), first
}

// startDVM starts our DVM on the hosts of hostfile through the bench's
// agent, and returns its URI, what stops it (and checks that nothing is
// left on the nodes) and what reads its side's CPU seconds so far.
func (b *bench) startDVM(hostfile string) (string, func() error, func() float64, error) {
	mpirun := b.ours[0].argv(hostsFiles{}, 0, 0)[0]
	uriFile := filepath.Join(b.cluster.Dir(), "dvm.uri")
	cmd := exec.Command(mpirun, "--dvm-start", "--dvm-uri", uriFile, "--hostfile", hostfile, "--launch-agent", b.agent+" %h")
	var stderr bytes.Buffer
	cmd.Env, cmd.Stderr = b.env, &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(b.c.Duration("timeout")); ; time.Sleep(10 * time.Millisecond) {
		if uri := dvmURI(uriFile); uri != "" {
			return uri, func() error { return b.stopDVM(mpirun, uri, exited) },
				func() float64 { return dvmSideCPU(b.cluster, cmd.Process.Pid) }, nil
		}
		select {
		case err := <-exited:
			return "", nil, nil, fmt.Errorf("the DVM did not start: %v: %s", err, lastLine(stderr.String()))
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return "", nil, nil, fmt.Errorf("the DVM was not up after --timeout %v", b.c.Duration("timeout"))
		}
	}
}

// dvmURI is the URI the DVM wrote into path once up (whole: it writes a
// file and renames it), or "".
func dvmURI(path string) string {
	b, _ := os.ReadFile(path)
	if uri := strings.TrimSpace(string(b)); strings.HasPrefix(uri, "unix:") {
		return uri
	}
	return ""
}

// stopDVM stops the DVM and checks it ended well, leaving nothing.
func (b *bench) stopDVM(mpirun, uri string, exited <-chan error) error {
	if err := b.job([]string{mpirun, "--dvm-stop", uri}); err != nil {
		return err
	}
	if err := <-exited; err != nil {
		return fmt.Errorf("the DVM: %v", err)
	}
	if left := b.cluster.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		b.cluster.KillLeftovers()
		return fmt.Errorf("the DVM left %d processes running, e.g. on %s: %s", len(left), left[0].Node, left[0].Cmdline)
	}
	return nil
}

// percentile is the p-th percentile (0 < p ≤ 100) of xs by the nearest
// rank: the smallest value at least p % of xs are at or below.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[max(0, int(math.Ceil(p/100*float64(len(s))))-1)]
}

// writeDVMTables prints the table and the goals' ratios, and writes
// them to --table.
func writeDVMTables(c *cli.Context, out io.Writer, limit float64, rows []dvmRow) error {
	var t strings.Builder
	n := c.Int("nodes")
	fmt.Fprintf(&t, "%d nodes; this machine forks, execs and reaps %.0f /bin/true a second (%d, %d at a time)\n\n",
		n, limit, c.Int("throughput"), c.Int("at-once"))
	fmt.Fprintf(&t, "| launcher | program | jobs (latency, throughput) | %d ranks median (s) | p99 (s) | 1 rank median (s) | p99 (s) | one-rank jobs/s (%d at a time) | of the limit | one client --cc: jobs/s | of the limit | CPU a job (ms): DVM side + client, %d ranks; 1 rank |\n",
		n, c.Int("at-once"), n)
	fmt.Fprint(&t, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var failures []string
	for _, r := range rows {
		if r.failure != "" {
			failures = append(failures, fmt.Sprintf("%s, %s: %s", r.launcher, r.program, r.failure))
		}
		if len(r.wide) == 0 {
			fmt.Fprintf(&t, "| %s | %s | | | | | | | failed | | | |\n", r.launcher, r.program)
			continue
		}
		fmt.Fprintf(&t, "| %s | %s | %d, %d | %.4f | %.4f | %s | %s | %s | %s | %s | %s | %s |\n", r.launcher, r.program, len(r.wide), r.jobs,
			median(r.wide), percentile(r.wide, 99), seconds(median(r.one), len(r.one)), seconds(percentile(r.one, 99), len(r.one)),
			rate(r.perSecond, "%.1f"), rate(r.perSecond/limit, "%.2f"), rate(r.copiesPerSecond, "%.1f"), rate(r.copiesPerSecond/limit, "%.2f"), r.cpuText())
	}
	if goals := dvmGoals(rows, n); goals != "" {
		fmt.Fprintf(&t, "\n%s", goals)
	}
	for _, f := range failures {
		fmt.Fprintf(&t, "\n%s\n", f)
	}
	fmt.Fprint(out, t.String())
	if path := c.String("table"); path != "" {
		return os.WriteFile(path, []byte(t.String()), 0o644)
	}
	return nil
}

// cpuText is a DVM row's CPU a job, where measured.
func (r dvmRow) cpuText() string {
	if r.cpu == nil || len(r.one) == 0 {
		return ""
	}
	ms := func(c dvmCPU) string { return fmt.Sprintf("%.1f + %.1f", c.side*1000, c.client*1000) }
	return ms(r.cpu[0]) + "; " + ms(r.cpu[1])
}

func seconds(x float64, n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%.4f", x)
}

func rate(x float64, format string) string {
	if x == 0 {
		return ""
	}
	return fmt.Sprintf(format, x)
}

// dvmGoals says, for each program, how many times faster than a fresh
// mpirun of ours a DVM job is (the goal: 20 on 16 nodes), and the DVM's
// one-rank throughput against the fresh one's.
func dvmGoals(rows []dvmRow, n int) string {
	var t strings.Builder
	for _, prog := range slurmPrograms {
		fresh := slices.IndexFunc(rows, func(r dvmRow) bool { return r.program == prog && r.launcher == "prsh, fresh" })
		dvm := slices.IndexFunc(rows, func(r dvmRow) bool { return r.program == prog && r.launcher == "prsh, DVM" })
		if fresh < 0 || dvm < 0 || len(rows[fresh].wide) == 0 || len(rows[dvm].wide) == 0 {
			continue
		}
		f, d := rows[fresh], rows[dvm]
		fmt.Fprintf(&t, "%s: a DVM job is %.1f× faster than a fresh mpirun on %d nodes (medians)", prog, median(f.wide)/median(d.wide), n)
		if len(f.one) > 0 && len(d.one) > 0 {
			fmt.Fprintf(&t, ", %.1f× on one node", median(f.one)/median(d.one))
		}
		t.WriteString("\n")
	}
	return t.String()
}
