package main

import (
	"testing"

	"prsh/daemon/protocol/sim"
)

// TestParseIdle: testbed sim's --idle-cpu is one share for the daemons or
// ms per second by kind, --idle-per-load ms per second by kind; anything
// else is refused.
func TestParseIdle(t *testing.T) {
	c, err := parseIdle("0.003", "")
	if err != nil || c != sim.Daemons(0.003) {
		t.Errorf("0.003: %+v, %v", c, err)
	}
	c, err = parseIdle("orted=0.8,guard=0.4", "orted=0.01")
	want := sim.IdleCosts{}
	want[sim.KindOrted] = sim.IdleCost{Share: 0.0008, PerLoad: 0.00001}
	want[sim.KindGuard] = sim.IdleCost{Share: 0.0004}
	if err != nil || c != want {
		t.Errorf("orted=0.8,guard=0.4 and orted=0.01: %+v, %v; want %+v", c, err, want)
	}
	for _, bad := range [][2]string{{"-1", ""}, {"sshd=1", ""}, {"orted=x", ""}, {"orted=-1", ""}, {"", "0.01"}, {"orted", ""}} {
		if _, err := parseIdle(bad[0], bad[1]); err == nil {
			t.Errorf("--idle-cpu %q --idle-per-load %q: no error", bad[0], bad[1])
		}
	}
}
