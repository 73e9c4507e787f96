package main

import (
	"math"
	"testing"

	"prsh/daemon/protocol/sim"
)

// TestKindsOf: a job's processes are named by command and place: the
// agent's shell, orted, a guard (prsh-guard, or an orted started by an
// orted) and the rank it started; other machines' processes are not the
// job's, and a rank's own children are no kind.
func TestKindsOf(t *testing.T) {
	all := []proc{
		{1, 0, "init"}, {50, 1, "orted"}, // another job
		{10, 1, "mpirun"},
		{11, 10, "sh"}, {12, 11, "orted"}, {13, 12, "prsh-guard"}, {14, 13, "sleep"}, {15, 14, "sleep"},
		{16, 12, "testbed-agent"},
		{21, 12, "sh"}, {22, 21, "orted"}, {23, 22, "orted"}, {24, 23, "python3"},
	}
	got := kindsOf(descendants(all, 10))
	want := map[int]sim.Kind{
		10: sim.KindMpirun, 11: sim.KindShell, 12: sim.KindOrted, 13: sim.KindGuard, 14: sim.KindRank,
		16: sim.KindAgent, 21: sim.KindShell, 22: sim.KindOrted, 23: sim.KindGuard, 24: sim.KindRank,
	}
	if len(got) != len(want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	for pid, k := range want {
		if got[pid] != k {
			t.Errorf("pid %d: %v, want %v", pid, got[pid], k)
		}
	}
	if d := descendants(all, 99); d != nil {
		t.Errorf("no such root: %v", d)
	}
}

// TestFitIdle: the idle cost of a kind is the line through its samples
// in the load, never below zero at no load nor falling with the load; a
// kind no sample saw costs nothing.
func TestFitIdle(t *testing.T) {
	sample := func(load, orted, guard float64) idleSample {
		s := idleSample{load: load}
		s.kinds[sim.KindOrted] = kindIdle{procs: 4, cpu: seconds2(4 * orted * 10), secs: 10}
		s.kinds[sim.KindGuard] = kindIdle{procs: 2, cpu: seconds2(2 * guard * 10), secs: 10}
		return s
	}
	tests := []struct {
		name         string
		samples      []idleSample
		orted, guard sim.IdleCost
	}{
		{"one sample: flat", []idleSample{sample(10, 0.001, 0.0004)}, sim.IdleCost{Share: 0.001}, sim.IdleCost{Share: 0.0004}},
		{"rising", []idleSample{sample(10, 0.001, 0.0004), sample(110, 0.002, 0.0004)}, sim.IdleCost{Share: 0.0009, PerLoad: 0.00001}, sim.IdleCost{Share: 0.0004}},
		{"falling: flat at the mean", []idleSample{sample(10, 0.002, 0.0004), sample(110, 0.001, 0.0004)}, sim.IdleCost{Share: 0.0015}, sim.IdleCost{Share: 0.0004}},
		{"steep: not below zero at no load", []idleSample{sample(10, 0.001, 0), sample(20, 0.003, 0)}, sim.IdleCost{PerLoad: 0.0002}, sim.IdleCost{}},
	}
	for _, tt := range tests {
		got := fitIdle(tt.samples)
		for _, c := range []struct {
			kind      sim.Kind
			got, want sim.IdleCost
		}{{sim.KindOrted, got[sim.KindOrted], tt.orted}, {sim.KindGuard, got[sim.KindGuard], tt.guard}} {
			if math.Abs(c.got.Share-c.want.Share) > 1e-9 || math.Abs(c.got.PerLoad-c.want.PerLoad) > 1e-9 {
				t.Errorf("%s: %v %+v, want %+v", tt.name, c.kind, c.got, c.want)
			}
		}
		if got[sim.KindMpirun] != (sim.IdleCost{}) {
			t.Errorf("%s: mpirun, never sampled, costs %+v", tt.name, got[sim.KindMpirun])
		}
	}
}
