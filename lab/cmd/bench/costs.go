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
	"prsh/testbed"
)

// costs are what one launch costs on this testbed, measured before the
// sweep, for the model: one set for every point.
type costs struct {
	oneNode time.Duration // wall of a launch on one node: the fastest, the least delayed by other work
	perNode time.Duration // CPU each more node adds to a launch of nodes nodes, besides the processes' idle CPU
	// growth is how much a host's CPU grows per node of the job (s/node;
	// 0 with one size measured): one run saw 30 % more at 512 nodes than
	// at 16, which a flat cost per host leaves out.
	growth   float64
	perHost  []hostCPU     // what each size of the cost step measured
	mpirun   time.Duration // CPU of a launch besides its nodes': mpirun's own
	rankCPU  time.Duration // CPU of a rank's start: its guard (the orted binary) and /bin/true
	idle     sim.IdleCosts // what each kind of process takes while it waits
	startup  time.Duration // one hop's time besides latency, spawn cost and CPU
	cores    int
	nodes    int     // the launch perNode and idle were measured on
	loadAvg1 float64 // the load average when they were
}

// hostCPU is the CPU a host added to a launch of nodes nodes.
type hostCPU struct {
	nodes int
	cpu   time.Duration
}

// costNodes is the size of the idle job: small enough that it does not
// queue for the CPU much.
const costNodes = 16

// costRuns is the fewest launches of each cost size: a host's CPU
// differs between the sizes by tenths of a ms, about one launch's noise.
const costRuns = 5

// measureCosts measures, with our mpirun through the testbed's agent: a
// launch of /bin/true on one node (the fastest wall, the CPU) and on each
// of --cost-nodes at --cost-degree (CPU per host, and its growth with the
// job), the idle cost of each kind of process in a job of --idle-nodes
// nodes whose ranks sleep, alone and beside --idle-busy busy loops, and
// locally the CPU of a rank's start.
func (b *bench) measureCosts(maxNodes, cores int) error {
	sizes, err := costSizes(b.c.String("cost-nodes"), maxNodes)
	if err != nil {
		return err
	}
	runs := max(costRuns, b.c.Int("runs"))
	degree := b.c.Int("cost-degree")
	one, err := b.launches(1, 1, runs, "/bin/true")
	if err != nil {
		return err
	}
	var busy []benchPoint
	for _, n := range sizes {
		p, err := b.launches(n, degree, runs, "/bin/true")
		if err != nil {
			return err
		}
		busy = append(busy, p)
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
	k := costs{oneNode: seconds2(slices.Min(one.walls)), rankCPU: rank, cores: cores, nodes: sizes[0],
		loadAvg1: loadAverage(), idle: fitIdle(idle)}
	k.perNode = seconds2(median(one.cpus))
	if sizes[0] > 1 {
		k.perNode = seconds2((median(busy[0].cpus) - median(one.cpus)) / float64(sizes[0]-1))
	}
	b.costs = k // launchIdle's model
	// The model adds every process's idle CPU itself: take out what its
	// idle costs say these launches spent so, before the fit.
	base := median(one.cpus) - b.launchIdle(1, 1)
	for i, n := range sizes {
		if n > 1 {
			cpu := (median(busy[i].cpus) - b.launchIdle(n, degree) - base) / float64(n-1)
			k.perHost = append(k.perHost, hostCPU{n, seconds2(cpu)})
		}
	}
	if len(k.perHost) > 0 {
		var at float64
		at, k.growth = fitGrowth(k.perHost)
		k.perNode = seconds2(at + k.growth*float64(k.nodes))
	}
	k.mpirun = max(0, seconds2(median(one.cpus))-k.perNode)
	hop := b.c.Duration("ssh-latency")
	if !b.c.Bool("native") {
		hop += b.c.Duration("spawn-cost")
	}
	k.startup = max(0, k.oneNode-hop-k.perNode)
	b.costs = k
	b.printCosts(idle)
	return nil
}

// printCosts says what the cost step measured and the model made of it.
func (b *bench) printCosts(idle []idleSample) {
	k := b.costs
	fmt.Fprintf(b.std.out, "costs (load average %.1f): one node %.3fs wall; %.4fs CPU per node (%d nodes, δ %d, its idle CPU aside), of which a rank's start %.3fs; "+
		"mpirun's own %.3fs; so one hop's start-up besides latency %v, spawn cost %v and CPU is %.3fs; model on %d cores\n",
		k.loadAvg1, k.oneNode.Seconds(), k.perNode.Seconds(), k.nodes, b.c.Int("cost-degree"), k.rankCPU.Seconds(), k.mpirun.Seconds(),
		b.c.Duration("ssh-latency"), b.c.Duration("spawn-cost"), k.startup.Seconds(), k.cores)
	var each []string
	for _, h := range k.perHost {
		each = append(each, fmt.Sprintf("%d nodes %.4fs", h.nodes, h.cpu.Seconds()))
	}
	m := b.simModel()
	fmt.Fprintf(b.std.out, "CPU per host (idle aside): %s; model %.4fs + %.2fµs per node (--orted-cpu %v --orted-cpu-per-node %v)\n",
		strings.Join(each, ", "), k.perNode.Seconds()-k.growth*float64(k.nodes), k.growth*1e6,
		time.Duration(m.OrtedCPU)*time.Microsecond, time.Duration(m.OrtedCPUPerNode*float64(time.Microsecond)))
	for _, s := range idle {
		fmt.Fprintf(b.std.out, "idle, beside %d busy loops, %.1f runnable: %s\n", s.busy, s.load, describeIdle(s))
	}
	fmt.Fprintf(b.std.out, "idle model (ms/s at no load + ms/s per runnable): %s\n", describeFit(k.idle))
}

// costSizes are the sizes of --cost-nodes that fit the cluster, in order;
// "max" is the largest of --nodes.
func costSizes(list string, maxNodes int) ([]int, error) {
	sizes, err := sim.ParseSizes(strings.ReplaceAll(list, "max", strconv.Itoa(maxNodes)))
	if err != nil {
		return nil, fmt.Errorf("--cost-nodes: %w", err)
	}
	for i := range sizes {
		sizes[i] = min(sizes[i], maxNodes)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes), nil
}

// fitGrowth is the line through each size's CPU per host, least squares:
// its value at no nodes and its slope, in seconds and seconds a node. A
// host's CPU is not taken to fall with the job: noise, the slope is 0.
func fitGrowth(perHost []hostCPU) (at0, slope float64) {
	var xs, ys []float64
	for _, h := range perHost {
		xs, ys = append(xs, float64(h.nodes)), append(ys, h.cpu.Seconds())
	}
	l := fitLine(xs, ys)
	return mean(ys) - l.PerLoad*mean(xs), l.PerLoad
}

// launchIdle is the idle CPU the model has a launch of n nodes at this
// degree spend with the costs measured so far.
func (b *bench) launchIdle(n, degree int) float64 {
	m := b.simModel()
	m.Nodes, m.SpawnDegree = n, min(degree, n)
	r, err := sim.Simulate(m, 0)
	if err != nil {
		return 0
	}
	var us int64
	for _, c := range r.IdleCPU {
		us += c
	}
	return float64(us) / 1e6
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

// launches runs our mpirun runs times on the first n nodes at this spawn
// degree, with this program instead of /bin/true.
func (b *bench) launches(n, degree, runs int, program ...string) (benchPoint, error) {
	p := benchPoint{nodes: n}
	hosts, err := b.hostfiles(n)
	if err != nil {
		return p, err
	}
	for range runs {
		argv := b.ours[0].argv(hosts, n, min(degree, n))
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
	orted, err := testbed.LookPath("orted", testbed.EnvValue(b.env, "PATH"))
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
	m.SpawnDegree = m.Degree(degree, n)
	r, err := sim.Simulate(m, 0)
	if err != nil || r.MpirunExit < 0 {
		return 0, m.SpawnDegree
	}
	return float64(r.MpirunExit) / 1e6, m.SpawnDegree
}

func (b *bench) simModel() sim.Model {
	k := b.costs
	// The orted's start takes the host's CPU besides the rank's, and all
	// of its growth with the job: it was seen in every kind of process,
	// and on shared cores where it goes matters little.
	orted := k.perNode - min(k.rankCPU, k.perNode) - seconds2(k.growth*float64(k.nodes))
	m := sim.Model{
		Routed: "radix", SSHLatency: b.c.Duration("ssh-latency").Microseconds(),
		SpawnCost: b.c.Duration("spawn-cost").Microseconds(), Startup: k.startup.Microseconds(),
		Latency: 100, BytesPerUS: 1000, RankTime: 1000,
		Cores: k.cores, FairShare: true, OrtedCPU: orted.Microseconds(), OrtedCPUPerNode: k.growth * 1e6,
		RankCPU: min(k.rankCPU, k.perNode).Microseconds(), Idle: k.idle,
		MpirunCPU: k.mpirun.Microseconds(),
	}
	if b.c.Bool("native") {
		m.SpawnCost, m.MaxSessions = 0, 64 // ssh's real cost is in the start-up; mpirun's bound
	}
	return m
}

// autoArgs makes our mpirun's argv choose its degree with --spawn-degree
// auto, given as hints the hop and session cost the model has.
func (b *bench) autoArgs(argv []string, n int) []string {
	m := b.simModel()
	hop := time.Duration(m.SSHLatency+m.Startup+m.OrtedStartCPU(n)+m.Latency) * time.Microsecond
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
