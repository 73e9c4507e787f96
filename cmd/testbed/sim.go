package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol/sim"
)

func simCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "simulate a launch of /bin/true on a virtual clock: the daemons' own protocol machine, no processes or sockets",
		Description: `Runs mpirun's and every orted's protocol machine (daemon/protocol) for
one rank per node, on a discrete-event clock with the cost model below,
and prints when phase 1 (spawn), phase 2 (addresses), the launch and the
exits complete. A failing node (--fail) ends the run as mpirun would: the
same lines on stderr, the same exit status.

Lists in --nodes or --spawn-degree make a sweep: a table on stdout, and
--csv writes it as CSV (the lab's bench sweep-plot draws it).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nodes", Aliases: []string{"n"}, Value: "1000", Usage: "number of nodes, or a comma-separated list"},
			&cli.StringFlag{Name: "spawn-degree", Value: "32", Usage: "δ, \"flat\" (mpirun spawns every orted), \"auto\" (topo.BestDegree for the costs below: hop = ssh latency + start-up + orted CPU), or a comma-separated list"},
			&cli.StringFlag{Name: "routed", Value: "radix", Usage: "routing topology: radix (radix δ), binomial, direct"},
			&cli.DurationFlag{Name: "ssh-latency", Value: 100 * time.Millisecond, Usage: "one hop of a session: from its start until the orted runs"},
			&cli.DurationFlag{Name: "spawn-cost", Value: 20 * time.Millisecond, Usage: "serial cost of each session at its spawner"},
			&cli.DurationFlag{Name: "startup", Value: 30 * time.Millisecond, Usage: "an orted's start-up until it calls back"},
			&cli.DurationFlag{Name: "msg-latency", Value: 100 * time.Microsecond, Usage: "latency of a message between two daemons"},
			&cli.Float64Flag{Name: "bandwidth", Value: 1000, Usage: "bandwidth of a link between two daemons, in MB/s (0: no bound)"},
			&cli.IntFlag{Name: "max-sessions", Value: 64, Usage: "sessions a spawner opens at once (the ssh agent's bound)"},
			&cli.IntFlag{Name: "cores", Usage: "cores shared by every process, as on a testbed that runs the cluster on one machine (0: a CPU per node, and the CPU flags below cost only their own time)"},
			&cli.StringFlag{Name: "cpu-share", Value: "fair", Usage: "with --cores: fair (every process in progress gets an equal share, as a time-sharing kernel gives) or fifo (first come, first served)"},
			&cli.DurationFlag{Name: "orted-cpu", Usage: "CPU of an orted's start (its session's processes included), before it calls back"},
			&cli.DurationFlag{Name: "orted-cpu-per-node", Usage: "CPU each orted's start takes more per node of the job, beside --orted-cpu (e.g. 6us: a host's launch CPU grows with the job; bench launch measures it at two sizes)"},
			&cli.DurationFlag{Name: "mpirun-cpu", Usage: "with --cores: mpirun's own CPU besides its nodes', taken beside its spawns from its start"},
			&cli.DurationFlag{Name: "rank-cpu", Usage: "CPU of a rank's start (its guard, its exec), before it runs"},
			&cli.StringFlag{Name: "idle-cpu", Usage: "with --cores: what each live process takes of the cores while it waits (timers, pings, runtime): KIND=MS,… in ms of CPU per second alive for kinds mpirun, orted, agent, shell, guard, rank (e.g. orted=0.8,guard=0.4,mpirun=2.5), or one share of a core for mpirun and each orted (e.g. 0.003)"},
			&cli.StringFlag{Name: "idle-per-load", Usage: "with --cores --cpu-share fair: KIND=MS,… more ms per second alive for each runnable piece of work on the cores (e.g. orted=0.01)"},
			&cli.DurationFlag{Name: "rank-time", Value: time.Millisecond, Usage: "how long each rank runs"},
			&cli.DurationFlag{Name: "callback-timeout", Value: 30 * time.Second, Usage: "how long a spawned orted may take to call back"},
			&cli.StringSliceFlag{Name: "fail", Usage: "NODE=refuse, NODE=no-callback or NODE=die@DURATION (virtual time), e.g. node017=die@3s"},
			&cli.StringFlag{Name: "on-unreachable", Value: "abort", Usage: "abort or skip, as mpirun's flag"},
			&cli.IntFlag{Name: "max-events", Value: 300_000_000, Usage: "stop a run after this many events (0: no bound)"},
			&cli.StringFlag{Name: "csv", Usage: "write the results as CSV to this file"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the simulator to this file"},
		},
		Action: func(c *cli.Context) error { return simAction(c, std) },
	}
}

func simAction(c *cli.Context, std stdio) error {
	nodes, err := sim.ParseSizes(c.String("nodes"))
	if err != nil {
		return fmt.Errorf("--nodes: %w", err)
	}
	degrees, err := sim.ParseDegrees(c.String("spawn-degree"))
	if err != nil {
		return fmt.Errorf("--spawn-degree: %w", err)
	}
	base, err := modelFromFlags(c)
	if err != nil {
		return err
	}
	if path := c.String("cpuprofile"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if len(nodes) == 1 && len(degrees) == 1 {
		return simOne(c, std, base, nodes[0], degrees[0])
	}
	return sweep(c, std, base, nodes, degrees)
}

func modelFromFlags(c *cli.Context) (sim.Model, error) {
	us := func(flag string) int64 { return c.Duration(flag).Microseconds() }
	m := sim.Model{
		Routed: c.String("routed"), SSHLatency: us("ssh-latency"), SpawnCost: us("spawn-cost"),
		Startup: us("startup"), Latency: us("msg-latency"), BytesPerUS: c.Float64("bandwidth"),
		MaxSessions: c.Int("max-sessions"), RankTime: us("rank-time"),
		CallbackMS: c.Duration("callback-timeout").Milliseconds(),
		Cores:      c.Int("cores"), OrtedCPU: us("orted-cpu"), RankCPU: us("rank-cpu"),
		OrtedCPUPerNode: float64(c.Duration("orted-cpu-per-node")) / float64(time.Microsecond),
		MpirunCPU:       us("mpirun-cpu"),
	}
	idle, err := parseIdle(c.String("idle-cpu"), c.String("idle-per-load"))
	if err != nil {
		return m, err
	}
	m.Idle = idle
	switch c.String("cpu-share") {
	case "fair":
		m.FairShare = true
	case "fifo":
	default:
		return m, fmt.Errorf("--cpu-share %q: want fair or fifo", c.String("cpu-share"))
	}
	if m.Cores < 0 || m.OrtedCPU < 0 || m.OrtedCPUPerNode < 0 || m.RankCPU < 0 || m.MpirunCPU < 0 {
		return m, fmt.Errorf("--cores, --orted-cpu, --orted-cpu-per-node, --rank-cpu and --mpirun-cpu must not be negative")
	}
	switch c.String("on-unreachable") {
	case "abort":
	case "skip":
		m.SkipUnreachable = true
	default:
		return m, fmt.Errorf("--on-unreachable %q: want abort or skip", c.String("on-unreachable"))
	}
	faults, err := parseFails(sim.SplitList(c.StringSlice("fail")...))
	m.Faults = faults
	return m, err
}

// parseIdle reads --idle-cpu (one share of a core for the daemons, or
// KIND=MS per kind) and --idle-per-load (KIND=MS), MS in ms per second.
func parseIdle(base, perLoad string) (sim.IdleCosts, error) {
	var c sim.IdleCosts
	if share, err := strconv.ParseFloat(base, 64); err == nil {
		if share < 0 {
			return c, fmt.Errorf("--idle-cpu %v: must not be negative", share)
		}
		c, base = sim.Daemons(share), ""
	}
	set := func(flag, list string, field func(*sim.IdleCost) *float64) error {
		for _, item := range sim.SplitList([]string{list}...) {
			name, v, _ := strings.Cut(item, "=")
			k, ok := sim.KindNamed(name)
			ms, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil || ms < 0 {
				return fmt.Errorf("--%s %q: want KIND=MS (ms of CPU per second, not negative), KIND one of mpirun, orted, agent, shell, guard, rank", flag, item)
			}
			*field(&c[k]) = ms / 1000
		}
		return nil
	}
	if err := set("idle-cpu", base, func(i *sim.IdleCost) *float64 { return &i.Share }); err != nil {
		return c, err
	}
	return c, set("idle-per-load", perLoad, func(i *sim.IdleCost) *float64 { return &i.PerLoad })
}

// parseFails reads NODE=refuse, NODE=no-callback and NODE=die@DURATION.
// A refused node's error and a dead orted's end are worded as the native
// ssh agent reports them, so that mpirun's line is the live one.
func parseFails(specs []string) (map[string]sim.Fault, error) {
	out := map[string]sim.Fault{}
	for _, spec := range specs {
		name, what, _ := strings.Cut(spec, "=")
		f := out[name]
		switch {
		case name == "":
			return nil, fmt.Errorf("--fail %q: want NODE=refuse, NODE=no-callback or NODE=die@DURATION", spec)
		case what == "refuse":
			f.Refuse = "ssh: dial tcp " + name + ":22: connect: connection refused"
		case what == "no-callback":
			f.NoCallback = true
		case strings.HasPrefix(what, "die@"):
			d, err := time.ParseDuration(strings.TrimPrefix(what, "die@"))
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("--fail %q: want a positive virtual time after die@, e.g. die@3s", spec)
			}
			f.DieAt, f.Signal = d.Microseconds(), "signal KILL"
		default:
			return nil, fmt.Errorf("--fail %q: want NODE=refuse, NODE=no-callback or NODE=die@DURATION", spec)
		}
		out[name] = f
	}
	return out, nil
}

// simOne runs one launch, prints its milestones and mpirun's stderr, and
// ends with mpirun's exit status.
func simOne(c *cli.Context, std stdio, m sim.Model, nodes, degree int) error {
	m.Nodes, m.SpawnDegree = nodes, m.Degree(degree, nodes)
	start := time.Now()
	r, err := sim.Simulate(m, c.Int("max-events"))
	if err != nil {
		return err
	}
	wall := time.Since(start)
	fmt.Fprintf(std.out, "simulated %d nodes, δ=%s, routed %s: ssh latency %v, spawn cost %v, start-up %v, message %v at %g MB/s\n",
		nodes, sim.DegreeLabel(degree, m.SpawnDegree), m.Routed, c.Duration("ssh-latency"), c.Duration("spawn-cost"),
		c.Duration("startup"), c.Duration("msg-latency"), c.Float64("bandwidth"))
	printMilestones(std.out, r)
	fmt.Fprintf(std.out, "%d events, %d messages (%.1f MB) in %.1fs\n", r.Events, r.Messages, float64(r.Bytes)/1e6, wall.Seconds())
	for _, l := range r.Stderr {
		fmt.Fprintln(std.err, l)
	}
	if r.OverBudget {
		return fmt.Errorf("sim: stopped after --max-events %d", c.Int("max-events"))
	}
	if err := writeOutputs(c, []row{{nodes, degree, m.SpawnDegree, r, wall}}); err != nil {
		return err
	}
	if r.Status != 0 {
		return exitCode(r.Status)
	}
	return nil
}

func printMilestones(w io.Writer, r sim.Result) {
	lines := []struct {
		what string
		at   int64
	}{
		{"phase 1 (daemons spawned)", r.Phase1},
		{"phase 2 (addresses exchanged)", r.Phase2},
		{"launch (ranks started)", r.Started},
		{"ranks exited", r.Exited},
		{"mpirun exited", r.MpirunExit},
		{"last orted exited", r.LastExit},
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %-30s %s\n", l.what, seconds(l.at))
	}
	var idle []string
	for k, us := range r.IdleCPU {
		if us > 0 {
			idle = append(idle, fmt.Sprintf("%v %.1fs", sim.Kind(k), float64(us)/1e6))
		}
	}
	if len(idle) > 0 {
		fmt.Fprintf(w, "  %-30s %s\n", "CPU of waiting processes", strings.Join(idle, ", "))
	}
	if r.Phase2 < 0 {
		fmt.Fprintf(w, "  phase 2 had not reached mpirun when the job ended; in the end %d daemons of %d had every address\n", r.Addressed, r.Daemons)
	}
	fmt.Fprintf(w, "  %-30s %d\n", "mpirun's exit status", r.Status)
}

// seconds shows a virtual time in µs, or "-" for one that never came.
func seconds(us int64) string {
	if us < 0 {
		return "-"
	}
	return fmt.Sprintf("%.3fs", float64(us)/1e6)
}
