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
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

func dvmCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "dvm",
		Usage: "small jobs through a DVM, one after another and 64 at a time, beside fresh launches and this machine's fork/exec/reap limit",
		Description: `Starts a cluster of --nodes nodes and measures, for each launcher, the
latency of /bin/true with one rank per node, --jobs jobs one after
another (median and 99th percentile wall seconds), and the throughput of
one-rank jobs of /bin/true on the first node, --throughput jobs with
--at-once of them running at any time (jobs a second). The launchers: a
DVM of ours (mpirun --dvm-start over the nodes, through testbed-agent,
then mpirun --dvm URI per job), a fresh mpirun of ours per job, and with
--peers Hydra's mpiexec and Open MPI's mpirun (ORTE, --uts), fresh too;
the fresh ones run --fresh-jobs jobs of each kind (they take hundreds of
milliseconds each). The limit: a Go loop that runs /bin/true --throughput
times, --at-once at a time, in the same run; the throughput table gives
each launcher's ratio to it. The issue's goals (issue 31): a DVM job 20
times faster than a fresh mpirun on 16 nodes; one-rank throughput at
least half the limit.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "nodes", Aliases: []string{"n"}, Value: 16, Usage: "nodes of the cluster, one rank on each in the latency jobs"},
			&cli.IntFlag{Name: "jobs", Value: 200, Usage: "latency jobs through the DVM, one after another"},
			&cli.IntFlag{Name: "throughput", Value: 1000, Usage: "one-rank jobs through the DVM, and runs of the limit's loop"},
			&cli.IntFlag{Name: "at-once", Value: 64, Usage: "jobs running at any time in the throughput runs"},
			&cli.IntFlag{Name: "fresh-jobs", Value: 20, Usage: "jobs of each kind by each fresh launcher"},
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

// dvmRow is one launcher's measurements.
type dvmRow struct {
	launcher  string
	latencies []float64 // seconds, one a job
	perSecond float64   // throughput, jobs a second; 0: not measured
	jobs      int       // of the throughput run
	failure   string
}

func benchDVMAction(c *cli.Context, std stdio) error {
	if c.Int("jobs") < 1 || c.Int("throughput") < 1 || c.Int("at-once") < 1 || c.Int("fresh-jobs") < 1 {
		return errors.New("--jobs, --throughput, --at-once and --fresh-jobs: want at least 1")
	}
	b, err := newBench(c, std, c.Int("nodes"))
	if err != nil {
		return err
	}
	defer b.close()
	limit := forkLimit(c.Int("throughput"), c.Int("at-once"))
	rows, err := b.dvmRows()
	if err != nil {
		return err
	}
	return writeDVMTables(c, std.out, limit, rows)
}

// dvmRows measures the fresh launchers first, then the DVM: a fresh
// launch waits for the nodes to be empty, which they are not while the
// DVM is up.
func (b *bench) dvmRows() ([]dvmRow, error) {
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
	mpiPeers := slices.DeleteFunc(slices.Clone(b.peers), func(l launcher) bool { return l.name != "hydra" && l.name != "ompi" })
	for _, l := range append([]launcher{b.ours[0]}, mpiPeers...) {
		row := dvmRow{launcher: l.name + ", fresh", failure: l.unavailable}
		if row.failure == "" {
			fresh := b.c.Int("fresh-jobs")
			row.latencies, row.perSecond, row.failure = b.jobsOf(l.argv(all, n, n), l.argv(one, 1, 1), fresh, fresh)
			row.jobs = fresh
		}
		rows = append(rows, row)
	}
	uri, stop, err := b.startDVM(all.slots)
	if err != nil {
		return nil, err
	}
	mpirun := b.ours[0].argv(all, n, n)[0]
	row := dvmRow{launcher: "prsh, DVM", jobs: b.c.Int("throughput")}
	row.latencies, row.perSecond, row.failure = b.jobsOf([]string{mpirun, "--dvm", uri, "/bin/true"},
		[]string{mpirun, "--dvm", uri, "-np", "1", "/bin/true"}, b.c.Int("jobs"), row.jobs)
	if err := stop(); err != nil && row.failure == "" {
		row.failure = err.Error()
	}
	return append(rows, row), nil
}

// jobsOf runs latency one after another and throughput of oneRank,
// --at-once at a time: the latencies, the jobs a second, or why not.
func (b *bench) jobsOf(latency, oneRank []string, jobs, throughput int) ([]float64, float64, string) {
	var walls []float64
	for range jobs {
		start := time.Now()
		if err := b.job(latency); err != nil {
			return nil, 0, err.Error()
		}
		walls = append(walls, time.Since(start).Seconds())
	}
	perSecond, err := b.atOnce(oneRank, throughput)
	if err != nil {
		return walls, 0, err.Error()
	}
	return walls, perSecond, ""
}

// job runs one job to its end; a failure or a hang is an error naming
// the launcher and its last line.
func (b *bench) job(argv []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Duration("timeout"))
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Env, cmd.Stderr, cmd.WaitDelay = b.env, &stderr, time.Second
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
// agent, and returns its URI and what stops it (and checks that nothing
// is left on the nodes).
func (b *bench) startDVM(hostfile string) (string, func() error, error) {
	mpirun := b.ours[0].argv(hostsFiles{}, 0, 0)[0]
	uriFile := filepath.Join(b.cluster.Dir(), "dvm.uri")
	cmd := exec.Command(mpirun, "--dvm-start", "--dvm-uri", uriFile, "--hostfile", hostfile, "--launch-agent", b.agent+" %h")
	var stderr bytes.Buffer
	cmd.Env, cmd.Stderr = b.env, &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(b.c.Duration("timeout")); ; time.Sleep(10 * time.Millisecond) {
		if uri := dvmURI(uriFile); uri != "" {
			return uri, func() error { return b.stopDVM(mpirun, uri, exited) }, nil
		}
		select {
		case err := <-exited:
			return "", nil, fmt.Errorf("the DVM did not start: %v: %s", err, lastLine(stderr.String()))
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return "", nil, fmt.Errorf("the DVM was not up after --timeout %v", b.c.Duration("timeout"))
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

// writeDVMTables prints the latency and throughput tables, and writes
// them to --table.
func writeDVMTables(c *cli.Context, out io.Writer, limit float64, rows []dvmRow) error {
	var t strings.Builder
	fmt.Fprintf(&t, "%d nodes; this machine forks, execs and reaps %.0f /bin/true a second (%d, %d at a time)\n\n",
		c.Int("nodes"), limit, c.Int("throughput"), c.Int("at-once"))
	fmt.Fprintf(&t, "| launcher | jobs (latency, throughput) | latency median (s) | p99 (s) | one-rank jobs/s (%d at a time) | of the limit |\n|---|---|---|---|---|---|\n", c.Int("at-once"))
	for _, r := range rows {
		if r.failure != "" && len(r.latencies) == 0 {
			fmt.Fprintf(&t, "| %s | | | | | %s |\n", r.launcher, r.failure)
			continue
		}
		fmt.Fprintf(&t, "| %s | %d, %d | %.4f | %.4f | %.1f | %.2f |\n", r.launcher, len(r.latencies), r.jobs,
			median(r.latencies), percentile(r.latencies, 99), r.perSecond, r.perSecond/limit)
		if r.failure != "" {
			fmt.Fprintf(&t, "\n%s: %s\n", r.launcher, r.failure)
		}
	}
	fmt.Fprint(out, t.String())
	if path := c.String("table"); path != "" {
		return os.WriteFile(path, []byte(t.String()), 0o644)
	}
	return nil
}
