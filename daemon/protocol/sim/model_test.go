package sim

import (
	"slices"
	"strings"
	"testing"
)

// model is the cost model of the 100,000-node figure, at n nodes.
func model(n, delta int) Model {
	return Model{
		Nodes: n, SpawnDegree: delta, SSHLatency: 100_000, SpawnCost: 20_000, Startup: 30_000,
		Latency: 100, BytesPerUS: 1000, MaxSessions: 64, RankTime: 1000,
	}
}

// TestSimulateMilestones: a healthy launch reaches each milestone in
// order, exits 0 and leaves nothing running; with ranks that outlive
// phase 2, every daemon ends with every address.
func TestSimulateMilestones(t *testing.T) {
	for _, delta := range []int{2, 8, 300} {
		m := model(300, delta)
		m.RankTime = 10_000_000
		r, err := Simulate(m, 0)
		if err != nil {
			t.Fatal(err)
		}
		times := []int64{r.Phase1, r.Started, r.Exited, r.MpirunExit}
		if r.Status != 0 || r.Phase1 < 0 || r.Phase2 < r.Phase1 || !slices.IsSorted(times) || r.LastExit > r.MpirunExit {
			t.Errorf("δ=%d: status %d, milestones %+v", delta, r.Status, r)
		}
		if r.Addressed != 301 || len(r.Left) != 0 {
			t.Errorf("δ=%d: %d daemons of 301 know every address, %v left running", delta, r.Addressed, r.Left)
		}
	}
}

// TestSimulateSpawnCost: the serial cost of each session at a spawner is
// paid once per child, so a flat launch takes at least n of them, and a
// spawner can only open MaxSessions at once.
func TestSimulateSpawnCost(t *testing.T) {
	m := model(100, 100)
	r, err := Simulate(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	if min := 100*m.SpawnCost + m.SSHLatency; r.Phase1 < min {
		t.Errorf("flat, 100 nodes: phase 1 at %dµs, before 100 serial sessions and a hop (%dµs)", r.Phase1, min)
	}
	m.SpawnCost, m.MaxSessions = 0, 10
	if r, _ = Simulate(m, 0); r.Phase1 < 10*m.SSHLatency {
		t.Errorf("flat, 100 nodes, 10 sessions at once: phase 1 at %dµs, before 10 rounds of a hop", r.Phase1)
	}
}

// TestSimulateFailures: a node that refuses, never calls back or dies
// ends the run as mpirun ends a live one: its one line and its status.
func TestSimulateFailures(t *testing.T) {
	tests := []struct {
		name   string
		fault  Fault
		skip   bool
		status int
		line   string
	}{
		{"refuse", Fault{Refuse: "ssh: connection refused"}, false, 255, "mpirun: node017: ssh: connection refused"},
		{"refuse, skip", Fault{Refuse: "ssh: connection refused"}, true, 0, "mpirun: warning: node017: ssh: connection refused (left out: --on-unreachable skip)"},
		{"no callback, skip", Fault{NoCallback: true}, true, 0, "mpirun: warning: node017: orted started but did not call back within 2s"},
		{"dies", Fault{DieAt: 3_000_000, Signal: "signal KILL"}, false, 255, "mpirun: node017: orted exited unexpectedly: signal KILL"},
		{"dies, skip", Fault{DieAt: 3_000_000, Signal: "signal KILL"}, true, 255, "mpirun: node017: orted exited unexpectedly: signal KILL"},
	}
	for _, tt := range tests {
		m := model(40, 2)
		m.RankTime, m.CallbackMS, m.SkipUnreachable = 5_000_000, 2000, tt.skip
		m.Faults = map[string]Fault{"node017": tt.fault}
		r, err := Simulate(m, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != tt.status || len(r.Stderr) != 1 || !strings.HasPrefix(r.Stderr[0], tt.line) || len(r.Left) != 0 {
			t.Errorf("%s: status %d, stderr %q, left %v; want %d and %q", tt.name, r.Status, r.Stderr, r.Left, tt.status, tt.line)
		}
	}
	if _, err := Simulate(Model{Nodes: 3, Faults: map[string]Fault{"node004": {}}}, 0); err == nil {
		t.Error("a fault on a node the cluster does not have: want an error")
	}
}

// TestSimulateBudget: a run over its budget of events says so.
func TestSimulateBudget(t *testing.T) {
	r, err := Simulate(model(50, 2), 100)
	if err != nil || !r.OverBudget || r.Events != 100 {
		t.Errorf("50 nodes in 100 events: %+v, %v; want stopped over budget", r, err)
	}
}

// TestOrtedCPUPerNode: the per-node term is the same as its total at
// this size given as OrtedCPU, on shared cores and without.
func TestOrtedCPUPerNode(t *testing.T) {
	for _, cores := range []int{0, 2} {
		grown := model(200, 8)
		grown.Cores, grown.FairShare = cores, true
		grown.OrtedCPU, grown.OrtedCPUPerNode = 10_000, 7.5
		flat := grown
		flat.OrtedCPU, flat.OrtedCPUPerNode = 11_500, 0
		a, err := Simulate(grown, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Simulate(flat, 0)
		if a.MpirunExit != b.MpirunExit || a.Phase1 != b.Phase1 {
			t.Errorf("%d cores: 10ms + 7.5µs a node ends at %d (phase 1 %d), 11.5ms at %d (%d)",
				cores, a.MpirunExit, a.Phase1, b.MpirunExit, b.Phase1)
		}
		less := grown
		less.OrtedCPUPerNode = 0
		if c, _ := Simulate(less, 0); c.Phase1 >= a.Phase1 {
			t.Errorf("%d cores: phase 1 at %d without the per-node term, %d with it", cores, c.Phase1, a.Phase1)
		}
	}
}
