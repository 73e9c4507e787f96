package sim

import "testing"

// TestCPUFirstComeFirstServed: work waits for the first core to free up,
// in the order it came; without cores of a shared machine it runs at once.
func TestCPUFirstComeFirstServed(t *testing.T) {
	c := newCPU(2)
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
	var own *cpu
	if done := own.run(7, 10); done != 17 {
		t.Errorf("a CPU per node: work of 10 at 7 done at %d, want 17", done)
	}
}

// TestSimulateSharedCores: on shared cores the launch takes at least its
// CPU divided by the cores; with as many cores as processes it is the
// launch on a CPU per node; and the cost model without CPU is unchanged.
func TestSimulateSharedCores(t *testing.T) {
	const n = 64
	m := model(n, 8)
	m.OrtedCPU, m.RankCPU = 100_000, 30_000
	own, err := Simulate(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.Cores = n
	many, _ := Simulate(m, 0)
	if many.MpirunExit != own.MpirunExit {
		t.Errorf("%d cores for %d nodes: mpirun exits at %dµs, with a CPU per node at %dµs", n, n, many.MpirunExit, own.MpirunExit)
	}
	m.Cores = 2
	two, _ := Simulate(m, 0)
	if bound := n * (m.OrtedCPU + m.RankCPU) / 2; two.MpirunExit < bound || two.Status != 0 {
		t.Errorf("2 cores: mpirun exits at %dµs with status %d, before the CPU allows (%dµs)", two.MpirunExit, two.Status, bound)
	}
	m.OrtedCPU, m.RankCPU = 0, 0
	free, _ := Simulate(m, 0)
	plain, _ := Simulate(model(n, 8), 0)
	if free.MpirunExit != plain.MpirunExit || free.MpirunExit >= own.MpirunExit {
		t.Errorf("no CPU work: mpirun exits at %dµs on 2 cores, %dµs without them, %dµs with the work", free.MpirunExit, plain.MpirunExit, own.MpirunExit)
	}
}
