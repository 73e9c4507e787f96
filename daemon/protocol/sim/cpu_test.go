package sim

import (
	"slices"
	"testing"
)

// TestCPUFirstComeFirstServed: work waits for the first core to free up,
// in the order it came; without cores of a shared machine it runs at once.
func TestCPUFirstComeFirstServed(t *testing.T) {
	c := newFIFOCPU(2)
	var got []int64
	for _, at := range []int64{0, 0, 0, 5, 40} {
		got = append(got, c.run(at, 10))
	}
	want := []int64{10, 10, 20, 20, 50}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("2 cores, work of 10 at 0,0,0,5,40: done at %v, want %v", got, want)
		}
	}
}

// TestCPUFairShare: k pieces of work on c cores each run at min(1, c/k)
// of a core, and a piece that ends leaves its share to the others.
func TestCPUFairShare(t *testing.T) {
	tests := []struct {
		cores int
		work  []int64
		want  []int64
	}{
		{2, []int64{10, 10, 10}, []int64{15, 15, 15}},
		{2, []int64{10, 30}, []int64{10, 30}},
		{1, []int64{10, 30}, []int64{20, 40}},
		{1, []int64{0, 10}, []int64{0, 10}},
	}
	for _, tt := range tests {
		s := New(Options{Nodes: 1, Cores: tt.cores, FairShare: true})
		got := make([]int64, len(tt.work))
		for i, w := range tt.work {
			s.compute(w, func() { got[i] = s.now })
		}
		s.Run(0)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%d cores, work %v from 0: done at %v, want %v", tt.cores, tt.work, got, tt.want)
		}
	}
	s := New(Options{Nodes: 1})
	var done int64
	s.At(7, func() { s.compute(10, func() { done = s.now }) })
	s.Run(0)
	if done != 17 {
		t.Errorf("a CPU per node: work of 10 at 7 done at %d, want 17", done)
	}
}

// TestSimulateSharedCores: on shared cores the launch takes at least its
// CPU divided by the cores; with as many cores as processes it is the
// launch on a CPU per node; and the cost model without CPU is unchanged.
func TestSimulateSharedCores(t *testing.T) {
	for _, fair := range []bool{false, true} {
		sharedCores(t, fair)
	}
}

func sharedCores(t *testing.T, fair bool) {
	const n = 64
	m := model(n, 8)
	m.FairShare = fair
	m.OrtedCPU, m.RankCPU = 100_000, 30_000
	own, err := Simulate(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.Cores = n
	many, _ := Simulate(m, 0)
	if many.MpirunExit != own.MpirunExit {
		t.Errorf("fair %v, %d cores for %d nodes: mpirun exits at %dµs, with a CPU per node at %dµs", fair, n, n, many.MpirunExit, own.MpirunExit)
	}
	m.Cores = 2
	two, _ := Simulate(m, 0)
	if bound := n * (m.OrtedCPU + m.RankCPU) / 2; two.MpirunExit < bound || two.Status != 0 {
		t.Errorf("fair %v, 2 cores: mpirun exits at %dµs with status %d, before the CPU allows (%dµs)", fair, two.MpirunExit, two.Status, bound)
	}
	m.OrtedCPU, m.RankCPU = 0, 0
	free, _ := Simulate(m, 0)
	plain, _ := Simulate(model(n, 8), 0)
	if free.MpirunExit != plain.MpirunExit || free.MpirunExit >= own.MpirunExit {
		t.Errorf("no CPU work: mpirun exits at %dµs on 2 cores, %dµs without them, %dµs with the work", free.MpirunExit, plain.MpirunExit, own.MpirunExit)
	}
}

// TestSimulateIdleCPU: daemons that take CPU while they wait slow a
// launch on shared cores, and cost nothing with a CPU per node.
func TestSimulateIdleCPU(t *testing.T) {
	m := model(128, 8)
	m.Cores, m.OrtedCPU, m.RankCPU, m.FairShare = 2, 50_000, 10_000, true
	busy, _ := Simulate(m, 0)
	m.Idle = Daemons(0.01)
	idle, _ := Simulate(m, 0)
	if idle.MpirunExit <= busy.MpirunExit || idle.Status != 0 || len(idle.Left) != 0 {
		t.Errorf("idle CPU 1%% per daemon on 2 cores: mpirun exits at %dµs (status %d, %v left), without it at %dµs",
			idle.MpirunExit, idle.Status, idle.Left, busy.MpirunExit)
	}
	m.Cores = 0
	own, _ := Simulate(m, 0)
	m.Idle = IdleCosts{}
	plain, _ := Simulate(m, 0)
	if own.MpirunExit != plain.MpirunExit {
		t.Errorf("a CPU per node: idle CPU moved mpirun's exit from %dµs to %dµs", plain.MpirunExit, own.MpirunExit)
	}
}

// TestSimulateMpirunCPU: mpirun's own CPU takes a share of shared cores
// beside the spawns, so a launch whose starts queue ends later, by no
// more than that CPU; with a CPU per node it costs nothing.
func TestSimulateMpirunCPU(t *testing.T) {
	m := model(64, 8)
	m.Cores, m.FairShare, m.OrtedCPU, m.RankCPU = 2, true, 50_000, 10_000
	plain, _ := Simulate(m, 0)
	m.MpirunCPU = 1_000_000
	busy, _ := Simulate(m, 0)
	if busy.MpirunExit <= plain.MpirunExit || busy.MpirunExit > plain.MpirunExit+m.MpirunCPU || busy.Status != 0 {
		t.Errorf("mpirun's own 1s of CPU on 2 cores: mpirun exits at %dµs (status %d), without it at %dµs", busy.MpirunExit, busy.Status, plain.MpirunExit)
	}
	m.Cores = 0
	own, _ := Simulate(m, 0)
	m.MpirunCPU = 0
	if base, _ := Simulate(m, 0); own.MpirunExit != base.MpirunExit {
		t.Errorf("a CPU per node: mpirun's CPU moved its exit from %dµs to %dµs", base.MpirunExit, own.MpirunExit)
	}
}
