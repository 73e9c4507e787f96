package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"prsh/daemon/protocol/sim"
)

// costs are what one launch costs on this testbed, measured before the
// sweep, for the model: one set for every point.
type costs struct {
	oneNode  time.Duration // wall of a launch on one node: the fastest, the least delayed by other work
	perNode  time.Duration // CPU each more node adds to a launch
	mpirun   time.Duration // CPU of a launch besides its nodes': mpirun's own
	rankCPU  time.Duration // CPU of a rank's start: its guard (the orted binary) and /bin/true
	idle     sim.IdleCosts // what each kind of process takes while it waits
	startup  time.Duration // one hop's time besides latency, spawn cost and CPU
	cores    int
	nodes    int     // the launch perNode and idle were measured on
	loadAvg1 float64 // the load average when they were
}

// costNodes is the size of the launches the costs are measured on: small
// enough that they do not queue for the CPU much.
const costNodes = 16

// measureCosts measures, with our mpirun through the testbed's agent:
// a launch of /bin/true on one node (the fastest wall, the CPU) and on costNodes
// nodes, flat (CPU), the idle cost of each kind of process in a job of
// costNodes nodes whose ranks sleep, alone and beside --idle-busy busy
// loops, and locally the CPU of a rank's start.
func (b *bench) measureCosts(maxNodes, cores int) error {
	n := min(costNodes, maxNodes)
	one, err := b.launches(1, "/bin/true")
	if err != nil {
		return err
	}
	busy, err := b.launches(n, "/bin/true")
	if err != nil {
		return err
	}
	var idle []idleSample
	for _, busy := range slices.Compact([]int{0, b.c.Int("idle-busy")}) {
		s, err := b.measureIdle(min(b.c.Int("idle-nodes"), maxNodes), busy)
		if err != nil {
			return err
		}
		idle = append(idle, s)
	}
	rank, err := b.rankCPU()
	if err != nil {
		return err
	}
	k := costs{oneNode: seconds2(slices.Min(one.walls)), rankCPU: rank, cores: cores, nodes: n, loadAvg1: loadAverage()}
	k.perNode = seconds2(median(one.cpus))
	if n > 1 {
		k.perNode = seconds2((median(busy.cpus) - median(one.cpus)) / float64(n-1))
	}
	k.mpirun = max(0, seconds2(median(one.cpus))-k.perNode)
	k.idle = fitIdle(idle)
	hop := b.c.Duration("ssh-latency")
	if !b.c.Bool("native") {
		hop += b.c.Duration("spawn-cost")
	}
	k.startup = max(0, k.oneNode-hop-k.perNode)
	b.costs = k
	fmt.Fprintf(b.std.out, "costs (load average %.1f): one node %.3fs wall; %.3fs CPU per node (%d nodes, flat), of which a rank's start %.3fs; "+
		"mpirun's own %.3fs; so one hop's start-up besides latency %v, spawn cost %v and CPU is %.3fs; model on %d cores\n",
		k.loadAvg1, k.oneNode.Seconds(), k.perNode.Seconds(), n, k.rankCPU.Seconds(), k.mpirun.Seconds(),
		b.c.Duration("ssh-latency"), b.c.Duration("spawn-cost"), k.startup.Seconds(), k.cores)
	for _, s := range idle {
		fmt.Fprintf(b.std.out, "idle, beside %d busy loops, %.1f runnable: %s\n", s.busy, s.load, describeIdle(s))
	}
	fmt.Fprintf(b.std.out, "idle model (ms/s at no load + ms/s per runnable): %s\n", describeFit(k.idle))
	return nil
}

// describeIdle says what each kind of process took while it waited.
func describeIdle(s idleSample) string {
	var parts []string
	for k, ki := range s.kinds {
		if ki.procs > 0 {
			parts = append(parts, fmt.Sprintf("%v %.3f ms/s (%d)", sim.Kind(k), 1000*ki.share(), ki.procs))
		}
	}
	return strings.Join(parts, ", ")
}

// describeFit is the idle model as testbed sim's flags say it.
func describeFit(c sim.IdleCosts) string {
	var base, slope []string
	for k, ic := range c {
		base = append(base, fmt.Sprintf("%v=%.3f", sim.Kind(k), 1000*ic.Share))
		slope = append(slope, fmt.Sprintf("%v=%.5f", sim.Kind(k), 1000*ic.PerLoad))
	}
	return "--idle-cpu " + strings.Join(base, ",") + " --idle-per-load " + strings.Join(slope, ",")
}

// launches runs our mpirun --runs times on the first n nodes, flat, with
// this program instead of /bin/true.
func (b *bench) launches(n int, program ...string) (benchPoint, error) {
	p := benchPoint{nodes: n}
	hosts, err := b.hostfiles(n)
	if err != nil {
		return p, err
	}
	for range b.c.Int("runs") {
		argv := b.ours[0].argv(hosts, n, n)
		argv = append(argv[:len(argv)-1], program...)
		wall, cpu, err := b.launch(argv)
		if err != nil {
			return p, fmt.Errorf("bench: costs: %d nodes, %s: %w", n, strings.Join(program, " "), err)
		}
		p.walls, p.cpus = append(p.walls, wall), append(p.cpus, cpu)
	}
	return p, nil
}

// rankCPU is the CPU of a rank's start on a node: its guard, a start of
// the orted binary, and /bin/true; the median of a few.
func (b *bench) rankCPU() (time.Duration, error) {
	orted, err := lookPath("orted", envValue(b.env, "PATH"))
	if err != nil {
		return 0, fmt.Errorf("bench: our orted: %w", err)
	}
	var each []time.Duration
	for range 5 {
		before := rusage(syscall.RUSAGE_CHILDREN)
		for _, argv := range [][]string{{orted, "--help"}, {"/bin/true"}} {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = b.env
			if err := cmd.Run(); err != nil {
				return 0, fmt.Errorf("bench: %s: %w", strings.Join(argv, " "), err)
			}
		}
		each = append(each, rusage(syscall.RUSAGE_CHILDREN)-before)
	}
	return slices.Sorted(slices.Values(each))[len(each)/2], nil
}

// model is the simulator's launch of n nodes at this degree with the
// measured costs: the configured latency and spawn cost, every process
// sharing the cores.
func (b *bench) model(n, degree int) (float64, int) {
	m := b.simModel()
	m.Nodes = n
	m.SpawnDegree = degreeOf(degree, n, m)
	r, err := sim.Simulate(m, 0)
	if err != nil || r.MpirunExit < 0 {
		return 0, m.SpawnDegree
	}
	return float64(r.MpirunExit) / 1e6, m.SpawnDegree
}

func (b *bench) simModel() sim.Model {
	k := b.costs
	orted := max(0, k.perNode-k.rankCPU)
	m := sim.Model{
		Routed: "radix", SSHLatency: b.c.Duration("ssh-latency").Microseconds(),
		SpawnCost: b.c.Duration("spawn-cost").Microseconds(), Startup: k.startup.Microseconds(),
		Latency: 100, BytesPerUS: 1000, RankTime: 1000,
		Cores: k.cores, FairShare: true, OrtedCPU: orted.Microseconds(), RankCPU: min(k.rankCPU, k.perNode).Microseconds(), Idle: k.idle,
		MpirunCPU: k.mpirun.Microseconds(),
	}
	if b.c.Bool("native") {
		m.SpawnCost, m.MaxSessions = 0, 64 // ssh's real cost is in the start-up; mpirun's bound
	}
	return m
}

// autoArgs makes our mpirun's argv choose its degree with --spawn-degree
// auto, given as hints the hop and session cost the model has.
func (b *bench) autoArgs(argv []string) []string {
	m := b.simModel()
	hop := time.Duration(m.SSHLatency+m.Startup+m.OrtedCPU+m.Latency) * time.Microsecond
	out := slices.Clone(argv)
	if i := slices.Index(out, "--spawn-degree"); i >= 0 && i+1 < len(out) {
		out[i+1] = "auto"
		out = slices.Insert(out, i+2, "--spawn-hop-hint", hop.String(),
			"--spawn-cost-hint", (time.Duration(m.SpawnCost) * time.Microsecond).String())
	}
	return out
}

func seconds2(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// loadAverage is the machine's load average over the last minute; 0 if
// it cannot be read.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	return f
}
