package sim

import "testing"

const idlePeriod = idlePeriodMS * ticksPerMS

// idleModel is a flat launch of n nodes on cores that never make work
// wait (one each), ranks running rankTime.
func idleModel(n int, rankTime int64) Model {
	m := model(n, n)
	m.Cores, m.FairShare, m.RankTime = 1000, true, rankTime
	return m
}

// TestIdleOverEachLife: each kind of process is charged its share over its
// own life: a rank over its run, an orted from its start to the job's
// end; the kinds without a cost are charged nothing.
func TestIdleOverEachLife(t *testing.T) {
	const n, share, run = 16, 0.01, 10_000_000
	m := idleModel(n, run)
	m.Idle[KindRank].Share = share
	r, err := Simulate(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	low, high := int64(n*share*(run-idlePeriod)), int64(n*share*run)
	if got := r.IdleCPU[KindRank]; got < low || got > high {
		t.Errorf("%d ranks running %dµs at %g of a core: charged %dµs, want %d–%d", n, run, share, got, low, high)
	}
	for k := range NumKinds {
		if k != KindRank && r.IdleCPU[k] != 0 {
			t.Errorf("%v has no idle cost but was charged %dµs", k, r.IdleCPU[k])
		}
	}
	m.Idle = IdleCosts{}
	m.Idle[KindOrted].Share = share
	r, _ = Simulate(m, 0)
	low, high = int64(n*share*(run-idlePeriod)), int64(n*share*float64(r.MpirunExit))
	if got := r.IdleCPU[KindOrted]; got < low || got > high {
		t.Errorf("%d orteds alive until %dµs at %g of a core: charged %dµs, want %d–%d", n, r.MpirunExit, share, got, low, high)
	}
}

// TestIdleAgentsWaitTheirTurn: a flat launch's agents wait for the
// spawner's serial cost, the later ones longer, and cost while they do;
// an agent that runs its shell within a period costs nothing.
func TestIdleAgentsWaitTheirTurn(t *testing.T) {
	const n, share = 8, 0.01
	m := idleModel(n, 1000)
	m.SpawnCost, m.SSHLatency, m.MaxSessions = 1_000_000, 100_000, 0
	m.Idle[KindAgent].Share = share
	r, _ := Simulate(m, 0)
	var life int64 // agent i waits i spawn costs and the latency
	for i := int64(1); i <= n; i++ {
		life += i*m.SpawnCost + m.SSHLatency
	}
	low, high := int64(share*float64(life-n*idlePeriod)), int64(share*float64(life))
	if got := r.IdleCPU[KindAgent]; got < low || got > high {
		t.Errorf("agents waiting %dµs in all at %g of a core: charged %dµs, want %d–%d", life, share, got, low, high)
	}
	m.SpawnCost = 0
	if r, _ := Simulate(m, 0); r.IdleCPU[KindAgent] != 0 {
		t.Errorf("agents that wait %dµs, less than a period: charged %dµs", m.SSHLatency, r.IdleCPU[KindAgent])
	}
}

// TestIdleGrowsWithLoad: a cost per runnable piece of work slows a launch
// whose starts queue on two cores, costs nothing on cores with nothing
// to run, and nothing with a CPU per node.
func TestIdleGrowsWithLoad(t *testing.T) {
	m := model(16, 4) // a cost per runnable queues idle work at every change of the load: small keeps it quick under -race
	m.Cores, m.FairShare, m.OrtedCPU, m.RankCPU = 2, true, 50_000, 10_000
	plain, _ := Simulate(m, 0)
	m.Idle[KindOrted].PerLoad = 0.0005
	loaded, _ := Simulate(m, 0)
	if loaded.MpirunExit <= plain.MpirunExit || loaded.IdleCPU[KindOrted] == 0 || loaded.Status != 0 {
		t.Errorf("orteds paying 0.05%% of a core per runnable: mpirun exits at %dµs (status %d, idle %dµs), without it at %dµs",
			loaded.MpirunExit, loaded.Status, loaded.IdleCPU[KindOrted], plain.MpirunExit)
	}
	m.OrtedCPU, m.RankCPU = 0, 0
	if r, _ := Simulate(m, 0); r.IdleCPU[KindOrted] != 0 {
		t.Errorf("no work on the cores: a cost per runnable charged %dµs", r.IdleCPU[KindOrted])
	}
	m.Cores, m.OrtedCPU, m.RankCPU = 0, 50_000, 10_000
	own, _ := Simulate(m, 0)
	m.Idle = IdleCosts{}
	if base, _ := Simulate(m, 0); own.MpirunExit != base.MpirunExit || own.IdleCPU[KindOrted] != 0 {
		t.Errorf("a CPU per node: the idle cost moved mpirun's exit from %dµs to %dµs", base.MpirunExit, own.MpirunExit)
	}
}

// TestKindNames: every kind has a name that finds it again.
func TestKindNames(t *testing.T) {
	for k := range NumKinds {
		if got, ok := KindNamed(k.String()); !ok || got != k {
			t.Errorf("KindNamed(%q) = %v, %v", k.String(), got, ok)
		}
	}
	if _, ok := KindNamed("sshd"); ok {
		t.Error("KindNamed(sshd) found a kind")
	}
}
