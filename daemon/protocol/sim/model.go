package sim

import (
	"fmt"
	"math"

	"prsh/daemon/protocol"
	"prsh/internal/timeouts"
)

// Model is the cost model of a simulated launch of one rank per node, as
// `mpirun /bin/true` in the paper's Figure 2. Times are in microseconds,
// the clock's tick here.
type Model struct {
	Nodes           int
	SpawnDegree     int    // δ; Nodes (or more) spawns every orted from mpirun
	Routed          string // "" = radix with radix δ
	SkipUnreachable bool

	SSHLatency  int64   // a session's hop: from its start until the orted runs
	SpawnCost   int64   // serial at each spawner, per session
	Startup     int64   // an orted's start until it calls its parent back
	Latency     int64   // per message
	BytesPerUS  float64 // a link's bandwidth; 0 = no bound
	MaxSessions int     // sessions a spawner opens at once; 0 = no bound
	RankTime    int64   // how long each rank runs
	CallbackMS  int64   // the callback timeout, in ms; 0 = the default

	// Cores > 0: every process shares that many cores (a testbed on one
	// machine), and each orted's start and each rank's start take OrtedCPU
	// and RankCPU of them, first come first served (FairShare: shared
	// equally), while every live process takes its kind's Idle share of
	// a core. 0: a CPU per node.
	Cores             int
	FairShare         bool // the cores shared equally, not first come first served
	OrtedCPU, RankCPU int64
	// OrtedCPUPerNode is how much more CPU each orted's start takes per
	// node of the job, in µs: a host's launch CPU grows with the job (its
	// address book, the Launch and their JSON grow with n, and so do the
	// job's peaks of runnable processes), measured at two sizes.
	OrtedCPUPerNode float64
	MpirunCPU       int64 // mpirun's own CPU, beside its spawns from its start
	Idle            IdleCosts

	// Faults by node name (node001 …).
	Faults map[string]Fault
}

// Result is what a simulated launch took, in microseconds of virtual time
// (-1: never happened), and how it ended.
type Result struct {
	Phase1, Phase2, Started, Exited int64 // when each milestone reached mpirun
	MpirunExit, LastExit            int64 // when mpirun, and the last orted, ended
	Status                          int   // mpirun's exit status
	Stderr                          []string
	Messages, Bytes                 int64
	IdleCPU                         [NumKinds]int64 // CPU each kind took while it waited
	Events                          int
	Left                            []string // orteds still running at the end
	// Addressed is how many daemons knew every address at the end: phase
	// 2 need not complete before a short job ends.
	Addressed, Daemons int
	OverBudget         bool // stopped after MaxEvents
}

// ticksPerMS: the model's clock counts microseconds.
const ticksPerMS = 1000

// Simulate runs the launch that m describes for at most maxEvents events
// (0 = no bound).
func Simulate(m Model, maxEvents int) (Result, error) {
	opt, err := m.options()
	if err != nil {
		return Result{}, err
	}
	s := New(opt)
	if err := s.Start(); err != nil {
		return Result{}, err
	}
	over := s.RunBounded(maxEvents)
	r := Result{
		Phase1: s.Reached[protocol.Spawned], Phase2: s.Reached[protocol.Addressed],
		Started: s.Reached[protocol.Started], Exited: s.Reached[protocol.Exited],
		MpirunExit: -1, LastExit: s.LastExit, Status: s.Status, Stderr: s.Stderr,
		Messages: s.Messages, Bytes: s.Bytes, IdleCPU: s.IdleCPU, Events: s.Steps, OverBudget: over,
		Daemons: m.Nodes + 1,
	}
	if s.Done {
		r.MpirunExit = s.ExitAt
	}
	if !over {
		r.Left = s.Running()
	}
	for id := range m.Nodes + 1 {
		if d := s.Machine(id); d != nil && d.Known() == m.Nodes+1 {
			r.Addressed++
		}
	}
	return r, nil
}

func (m Model) options() (Options, error) {
	if m.Nodes < 1 {
		return Options{}, fmt.Errorf("a cluster of %d nodes", m.Nodes)
	}
	routed := m.Routed
	if routed == "" {
		routed = "radix"
	}
	hosts := Hosts(m.Nodes)
	faults, err := faultsByID(m.Faults, hosts)
	if err != nil {
		return Options{}, err
	}
	app := protocol.Launch{Argv: []string{"/bin/true"}, StdinRank: protocol.StdinNone}
	for id := 1; id <= m.Nodes; id++ {
		app.RankNode = append(app.RankNode, id)
	}
	return Options{
		Job: protocol.JobSpec{
			SpawnDegree: min(m.SpawnDegree, m.Nodes), Routed: routed, Hosts: hosts,
			Timeouts: timeouts.Timeouts{CallbackMS: m.CallbackMS}, KillGraceMS: 3000, SkipUnreachable: m.SkipUnreachable,
		},
		Nodes: m.Nodes, App: app, Remap: survivors(m.Nodes),
		TicksPerMS: ticksPerMS, ShareBook: true,
		Delay:        func(int, int) int64 { return m.Latency },
		BytesPerTick: m.BytesPerUS,
		SpawnMS:      m.SSHLatency, StartMS: m.Startup + m.Latency,
		SpawnCost: m.SpawnCost, MaxSessions: m.MaxSessions,
		RankMS: m.RankTime, Faults: faults,
		Cores: m.Cores, FairShare: m.FairShare, OrtedCPU: m.OrtedStartCPU(m.Nodes), RankCPU: m.RankCPU, Idle: m.Idle, MpirunCPU: m.MpirunCPU,
	}, nil
}

// OrtedStartCPU is the CPU of each orted's start in a job of n nodes.
func (m Model) OrtedStartCPU(n int) int64 {
	return max(0, m.OrtedCPU+int64(math.Round(m.OrtedCPUPerNode*float64(n))))
}

// faultsByID turns faults by node name into faults by daemon id.
func faultsByID(byName map[string]Fault, hosts []string) (map[int]Fault, error) {
	ids := map[string]int{}
	for id, h := range hosts[1:] {
		ids[h] = id + 1
	}
	out := map[int]Fault{}
	for name, f := range byName {
		id, ok := ids[name]
		if !ok {
			return nil, fmt.Errorf("no node %q among node001…%s", name, hosts[len(hosts)-1])
		}
		out[id] = f
	}
	return out, nil
}

// survivors places one rank on each node that came up, as mpirun does
// after --on-unreachable skip left some out.
func survivors(nodes int) func(skipped map[int]bool) ([]int, error) {
	return func(skipped map[int]bool) ([]int, error) {
		var up []int
		for id := 1; id <= nodes; id++ {
			if !skipped[id] {
				up = append(up, id)
			}
		}
		if len(up) == 0 {
			return nil, fmt.Errorf("no node could be reached")
		}
		return up, nil
	}
}
