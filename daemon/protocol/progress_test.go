package protocol

import (
	"testing"

	"prsh/spawn"
)

// mpirun's line: the daemons called back, the skipped ones, and at most
// MaxSlow names then how many more; only a count when no name is known.
func TestWaitingLine(t *testing.T) {
	hosts := []string{"mpirun", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	m, err := New(Config{ID: 0, Parent: -1, Job: JobSpec{Daemons: 10, SpawnDegree: 3, Routed: "radix", Hosts: hosts},
		Nodes: []spawn.Node{{ID: 1, Host: "n1"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p       Pending
		skipped []int
		want    string
	}{
		{Pending{1, []int{5}}, nil, "mpirun: 8 of 9 daemons called back; waiting for n5"},
		{Pending{7, []int{1, 2, 3, 4, 5}}, nil, "mpirun: 2 of 9 daemons called back; waiting for n1, n2, n3, n4, n5 and 2 more"},
		{Pending{3, nil}, nil, "mpirun: 6 of 9 daemons called back; waiting for 3"},
		{Pending{2, []int{7, 9}}, []int{3}, "mpirun: 6 of 9 daemons called back (1 skipped); waiting for n7, n9"},
		{Pending{1, []int{42}}, nil, "mpirun: 8 of 9 daemons called back; waiting for daemon 42"},
	} {
		m.root.skipped = map[int]bool{}
		for _, id := range c.skipped {
			m.root.skipped[id] = true
		}
		if got := m.root.waitingLine(c.p); got != c.want {
			t.Errorf("waitingLine(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// A child's Pending is kept bounded whatever it says: no negative count,
// no more than MaxSlow names.
func TestPendingFromBounded(t *testing.T) {
	m, err := New(Config{ID: 0, Parent: -1, Job: JobSpec{Daemons: 3, SpawnDegree: 2, Routed: "radix"}})
	if err != nil {
		t.Fatal(err)
	}
	m.children[1] = &child{id: 1, call: callLinked}
	m.pendingFrom(1, Pending{Missing: -4, Slow: []int{2, 2, 2, 2, 2, 2, 2, 2}})
	if p := m.children[1].pending; p.Missing != 0 || len(p.Slow) != MaxSlow {
		t.Errorf("kept %+v", p)
	}
	m.pendingFrom(2, Pending{Missing: 1}) // not a child: ignored
	if _, ok := m.children[2]; ok {
		t.Error("a Pending from a stranger made a child")
	}
}
