package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol/sim"
	"prsh/testbed"
)

func launchCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "launch",
		Usage: "launch /bin/true, one rank per node, with our mpirun for every (nodes, δ), and with other launchers (--peers)",
		Description: `Starts one cluster of the largest node count and launches /bin/true on its
first N nodes, --runs times per point, through testbed-agent (the low-CPU
launch agent: --ssh-latency and --spawn-cost as sleeps) or, with --native,
through ssh (mpirun's own client; the peers use OpenSSH's with the cluster's
ssh_config). Prints the median, min and max wall seconds and the median CPU
seconds of the whole launch (every process of it: agent, shells, daemons,
ranks; from a cgroup when one can be made, else from getrusage), the load
average after the point, and the model: the simulator's time (testbed sim)
with the configured latency and spawn cost and the costs measured first,
one set for every point: a launch on one node (wall, CPU), on each of
--cost-nodes at --cost-degree (CPU per host, a line in the job's size), a rank's start (the orted binary and /bin/true), and the
CPU each kind of process (mpirun, orted, agent, shell, guard, rank) takes
a second while it waits, from schedstat, in a job of --idle-nodes whose
ranks sleep (beside --idle-busy busy loops too), on --model-cores cores
that every process shares equally (testbed sim --cpu-share fair). δ auto runs mpirun --spawn-degree auto with the
model's hop and spawn cost as hints.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "nodes", Aliases: []string{"n"}, Value: "16,64", Usage: "node counts, comma-separated"},
			&cli.StringFlag{Name: "degrees", Value: "2,8,32,flat", Usage: "spawn degrees δ of our mpirun, comma-separated; flat: mpirun spawns every orted; auto: mpirun --spawn-degree auto"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "launches per point"},
			&cli.IntFlag{Name: "model-cores", Value: runtime.NumCPU(), Usage: "cores the model shares among every process of a launch (the testbed's machine)"},
			&cli.BoolFlag{Name: "native", Usage: "launch over ssh instead of testbed-agent"},
			&cli.BoolFlag{Name: "peers", Usage: "also launch with mpiexec.hydra, mpirun.openmpi, pdsh and clush"},
			&cli.StringSliceFlag{Name: "peer", Usage: "only this peer: hydra, ompi, pdsh or clush (repeat); implies --peers"},
			&cli.StringSliceFlag{Name: "mpirun-arg", Usage: "extra argument to our mpirun (repeat), e.g. --mpirun-arg=--callback-timeout=2m (our rows always have --report-launch-times)"},
			&cli.StringSliceFlag{Name: "variant", Usage: "NAME=ARGS: measure our mpirun with these extra space-separated arguments too, beside the plain one (repeat), e.g. 'before=--orted /tmp/old/orted'"},
			&cli.StringFlag{Name: "cost-nodes", Value: "16,max", Usage: "sizes of the launches that measure a host's CPU, comma-separated (each at most the largest of --nodes; max: the largest): the model's CPU per host is the line through them in the job's size (on the testbed it grows past 256 nodes, which smaller sizes do not foresee: lab/notebooks/CALIBRATION.md)"},
			&cli.IntFlag{Name: "cost-degree", Value: 8, Usage: "spawn degree of those launches: a tree, as the points' (a flat one's mpirun serves every link for n spawn costs, and a host costs more)"},
			&cli.IntFlag{Name: "idle-nodes", Value: costNodes, Usage: "nodes of the job whose idle costs are measured (at most the largest of --nodes)"},
			&cli.IntFlag{Name: "idle-degree", Value: 2, Usage: "spawn degree of the idle job: each daemon's links are pinged, and any tree has about 2 link ends per orted, a flat one 1"},
			&cli.IntFlag{Name: "idle-busy", Usage: "also measure the idle costs beside this many busy loops, and model their dependence on the runnable processes as the line through both (0: measure once, no dependence; none was found from 5 to 190 runnable)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up on one launch after this long"},
			&cli.StringFlag{Name: "csv", Usage: "write the results as CSV to this file"},
			&cli.StringFlag{Name: "plot", Usage: "write a PNG of time against nodes, one line per launcher and δ, to this file"},
		}, clusterFlags()...),
		Action: func(c *cli.Context) error { return benchLaunchAction(c, std) },
	}
}

// benchPoint is every run of one launcher at one node count.
type benchPoint struct {
	launcher string
	nodes    int
	degree   int     // ours only; flat for the peers; may be auto
	chosen   int     // the degree the model ran with (auto's choice)
	load     float64 // the load average after the runs
	walls    []float64
	cpus     []float64
	times    []launchTimes // ours: each run's milestones
	model    float64       // seconds the tree allows; 0: no model
	failure  string        // why the launcher could not run here
}

func benchLaunchAction(c *cli.Context, std stdio) error {
	nodes, err := sim.ParseSizes(c.String("nodes"))
	if err != nil {
		return fmt.Errorf("--nodes: %w", err)
	}
	degrees, err := sim.ParseDegrees(c.String("degrees"))
	if err != nil {
		return fmt.Errorf("--degrees: %w", err)
	}
	if c.Int("runs") < 1 {
		return errors.New("--runs: want at least 1")
	}
	b, err := newBench(c, std, slices.Max(nodes))
	if err != nil {
		return err
	}
	defer b.close()
	points, err := b.sweep(nodes, degrees)
	if err != nil {
		return err
	}
	return writeBenchOutputs(c, points)
}

// bench is one cluster and the launchers measured on it.
type bench struct {
	c       *cli.Context
	std     stdio
	cluster *testbed.Cluster
	env     []string   // of every launcher
	agent   string     // the rsh agent every launcher uses
	ours    []launcher // our mpirun, then its --variant's
	peers   []launcher
	meter   cpuMeter
	costs   costs     // measured before the sweep, for the model
	stdout  io.Writer // takes the launches' stdout; nil: discarded
}

func newBench(c *cli.Context, std stdio, maxNodes int) (*bench, error) {
	extra := sim.SplitList(c.StringSlice("env")...)
	cfg := testbed.Config{
		Nodes: maxNodes, SSHLatency: c.Duration("ssh-latency"), SpawnCost: c.Duration("spawn-cost"),
		UTS: c.Bool("uts"), Env: append([]string{pathEnv()}, extra...),
	}
	cl, err := testbed.Start(cfg)
	if err != nil {
		return nil, err
	}
	b := &bench{c: c, std: std, cluster: cl, meter: newCPUMeter(c.Bool("native"))}
	b.env = append(append(append(os.Environ(), cl.Env()...), pathEnv()), extra...)
	if err := b.findLaunchers(); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bench) close() {
	b.meter.close()
	b.cluster.Close()
}

// findLaunchers picks the agent and our mpirun, and the peers that can run.
func (b *bench) findLaunchers() error {
	path := testbed.EnvValue(b.env, "PATH")
	agent, err := b.agentPath(path)
	if err != nil {
		return err
	}
	b.agent = agent
	mpirun, err := testbed.LookPath("mpirun", path)
	if err != nil {
		return fmt.Errorf("bench: our mpirun: %w (build it beside bench: make bench)", err)
	}
	b.ours, err = oursLaunchers(mpirun, b.agent, b.c.Bool("native"), b.c.StringSlice("mpirun-arg"), b.c.StringSlice("variant"))
	if err != nil {
		return err
	}
	if only := b.c.StringSlice("peer"); b.c.Bool("peers") || len(only) > 0 {
		if b.peers, err = pickPeers(peerLaunchers(b.agent, b.c.Bool("uts")), only); err != nil {
			return err
		}
	}
	return nil
}

// pickPeers keeps the peers named in only, all of them if it is empty.
func pickPeers(all []launcher, only []string) ([]launcher, error) {
	if len(only) == 0 {
		return all, nil
	}
	var names []string
	for _, l := range all {
		names = append(names, l.name)
	}
	var out []launcher
	for _, name := range only {
		i := slices.Index(names, name)
		if i < 0 {
			return nil, fmt.Errorf("--peer %q: not one of %s", name, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// agentPath is testbed-agent, or with --native a wrapper that runs
// OpenSSH's client with the cluster's ssh_config (for the peers).
func (b *bench) agentPath(path string) (string, error) {
	if !b.c.Bool("native") {
		p, err := testbed.LookPath("testbed-agent", path)
		if err != nil {
			return "", fmt.Errorf("bench: testbed-agent: %w (build it beside bench: make bench)", err)
		}
		return p, nil
	}
	wrapper := filepath.Join(b.cluster.Dir(), "ssh")
	script := "#!/bin/sh\nexec ssh -F " + b.cluster.SSHConfigPath() + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return wrapper, nil
}

// sweep measures the start-up, then every point, smallest first, printing
// each row as it completes.
func (b *bench) sweep(nodes, degrees []int) ([]benchPoint, error) {
	if err := b.measureCosts(slices.Max(nodes), b.c.Int("model-cores")); err != nil {
		return nil, err
	}
	printBenchHeader(b.std.out)
	var points []benchPoint
	for _, n := range nodes {
		for _, d := range degrees {
			model, chosen := b.model(n, d)
			for _, l := range b.ours { // variants side by side, as alike as one run makes them
				p := b.measure(l, n, d)
				p.model, p.chosen = model, chosen
				printBenchRow(b.std.out, p)
				points = append(points, p)
			}
		}
		for i := range b.peers {
			p := b.measure(b.peers[i], n, sim.Flat)
			if p.failure != "" && b.peers[i].unavailable == "" {
				b.peers[i].unavailable = p.failure // do not retry at larger sizes
			}
			printBenchRow(b.std.out, p)
			points = append(points, p)
		}
	}
	return points, nil
}

// measure runs one launcher --runs times on the first n nodes.
func (b *bench) measure(l launcher, n, degree int) (p benchPoint) {
	p = benchPoint{launcher: l.name, nodes: n, degree: degree, failure: l.unavailable}
	if p.failure != "" {
		return p
	}
	hosts, err := b.hostfiles(n)
	if err != nil {
		p.failure = err.Error()
		return p
	}
	argv := l.argv(hosts, n, b.simModel().Degree(degree, n))
	if degree == sim.Auto && isOurs(l.name) {
		argv = b.autoArgs(argv, n)
	}
	defer func() { p.load = loadAverage() }()
	for range b.c.Int("runs") {
		r, err := b.launchWatched(argv, nil)
		if err != nil {
			p.failure = err.Error()
			return p
		}
		p.walls, p.cpus, p.times = append(p.walls, r.wall), append(p.cpus, r.cpu), append(p.times, r.milestones)
	}
	return p
}

// hostsFiles are the host lists of the first n nodes, in each launcher's
// format.
type hostsFiles struct {
	names          []string
	slots, counted string // "node001 slots=1" and "node001:1" per line
}

func (b *bench) hostfiles(n int) (hostsFiles, error) { return b.hostfilesOf(n, 1) }

// hostfilesOf lists the first n nodes with slots slots each.
func (b *bench) hostfilesOf(n, slots int) (hostsFiles, error) {
	var h hostsFiles
	for _, node := range b.cluster.Nodes()[:n] {
		h.names = append(h.names, node.Name)
	}
	dir := b.cluster.Dir()
	h.slots = filepath.Join(dir, fmt.Sprintf("hosts-%dx%d", n, slots))
	h.counted = h.slots + ".hydra"
	var withSlots, counted strings.Builder
	for _, name := range h.names {
		fmt.Fprintf(&withSlots, "%s slots=%d\n", name, slots)
		fmt.Fprintf(&counted, "%s:%d\n", name, slots)
	}
	if err := os.WriteFile(h.slots, []byte(withSlots.String()), 0o644); err != nil {
		return h, fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(h.counted, []byte(counted.String()), 0o644); err != nil {
		return h, fmt.Errorf("bench: %w", err)
	}
	return h, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
