package routed_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"prsh/daemon/protocol"
	"prsh/daemon/protocol/sim"
	"prsh/internal/purity"
	"prsh/routed"
	"prsh/topo"
)

func TestPure(t *testing.T) { purity.Check(t, "prsh/routed") }

func TestNew(t *testing.T) {
	for _, name := range routed.Names {
		r, err := routed.New(name, 10, 3)
		if err != nil || r.Name() != name || r.Tree().Size() != 10 {
			t.Errorf("New(%q, 10, 3) = %v, %v; want a topology of that name over 10 daemons", name, r, err)
		}
	}
	if r, err := routed.New("mesh", 10, 3); err == nil {
		t.Errorf("New(\"mesh\") = %v, want an error", r)
	}
}

func TestTreeRouting(t *testing.T) {
	tests := []struct {
		name string
		tree topo.Tree
	}{
		{"radix", topo.Radix(40, 3)},
		{"binomial", topo.Binomial(40)},
	}
	for _, tt := range tests {
		r, err := routed.New(tt.name, 40, 3)
		if err != nil {
			t.Fatal(err)
		}
		for self := range 40 {
			if got, want := r.Fanout(self), tt.tree.Children(self); !slices.Equal(got, want) {
				t.Errorf("%s: Fanout(%d) = %v, want its children %v", tt.name, self, got, want)
			}
			for dst := range 40 {
				if got, want := r.NextHop(self, dst), topo.Toward(tt.tree, self, dst); got != want {
					t.Errorf("%s: NextHop(%d, %d) = %d, want %d", tt.name, self, dst, got, want)
				}
			}
		}
	}
}

func TestDirectRouting(t *testing.T) {
	r, err := routed.New("direct", 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Fanout(0); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("direct: Fanout(0) = %v, want every daemon", got)
	}
	for self := 1; self < 6; self++ {
		if got := r.Fanout(self); len(got) != 0 {
			t.Errorf("direct: Fanout(%d) = %v, want none", self, got)
		}
		for dst := range 6 {
			if got := r.NextHop(self, dst); got != dst {
				t.Errorf("direct: NextHop(%d, %d) = %d, want %d", self, dst, got, dst)
			}
		}
	}
}

// TestRouter drives a Router by hand: a message for a daemon whose address
// is unknown is held, in order, behind any earlier one even once the
// address is known, and Learned releases it exactly once.
func TestRouter(t *testing.T) {
	type d = routed.Delivery[string]
	known := map[int]bool{1: true}
	top, err := routed.New("direct", 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := routed.NewRouter[string](0, top, func(id int) bool { return known[id] })
	steps := []struct {
		what  string
		do    func() []d
		want  []d
		held  int
		learn []int // addresses that become known before the step
	}{
		{what: "known: sent at once", do: func() []d { return r.Route(1, "a") }, want: []d{{1, "a"}}},
		{what: "unknown: held", do: func() []d { return r.Route(3, "b") }, held: 1},
		{what: "held in order", do: func() []d { return r.Route(3, "c") }, held: 2},
		{what: "another unknown", do: func() []d { return r.Neighbour(4, "d") }, held: 3},
		{what: "Learned before it is known releases nothing", do: func() []d { return r.Learned(3) }, held: 3},
		{what: "known but not yet Learned: still behind the held ones", learn: []int{3},
			do: func() []d { return r.Route(3, "e") }, held: 4},
		{what: "Learned releases in order", do: func() []d { return r.Learned(3) },
			want: []d{{3, "b"}, {3, "c"}, {3, "e"}}, held: 1},
		{what: "Learned again releases nothing", do: func() []d { return r.Learned(3, 3) }, held: 1},
		{what: "now sent at once", do: func() []d { return r.Route(3, "f") }, want: []d{{3, "f"}}, held: 1},
		{what: "Learned of ids with nothing held", learn: []int{2, 4, 5},
			do: func() []d { return r.Learned(2, 5, 4, 4) }, want: []d{{4, "d"}}},
	}
	for _, st := range steps {
		for _, id := range st.learn {
			known[id] = true
		}
		if got := st.do(); !reflect.DeepEqual(got, st.want) {
			t.Fatalf("%s: got %v, want %v", st.what, got, st.want)
		}
		if got := r.Held(); got != st.held {
			t.Fatalf("%s: Held() = %d, want %d", st.what, got, st.held)
		}
	}
}

// TestFloodErrors: addresses from a daemon that is neither the parent
// nor a child, or a child reporting twice, are errors.
func TestFloodErrors(t *testing.T) {
	a := routed.NewFlood(1, "one", 0, []int{3, 4}, routed.NewBook(6))
	if sends := a.Start(); len(sends) != 0 {
		t.Errorf("daemon 1 with children: Start = %v, want nothing before they report", sends)
	}
	for _, from := range []int{2, 5, 1, -1} {
		if _, _, err := a.Receive(from, routed.EntriesOf(routed.Entry{ID: from, Addr: "x"})); err == nil {
			t.Errorf("daemon 1: Receive from %d, neither parent nor child: want an error", from)
		}
	}
	three := routed.EntriesOf(routed.Entry{ID: 3, Addr: "three"})
	if _, _, err := a.Receive(3, three); err != nil {
		t.Fatalf("daemon 1: first report of 3: %v", err)
	}
	if _, _, err := a.Receive(3, three); err == nil {
		t.Error("daemon 1: second report of 3: want an error")
	}
}

// TestFloodByHand follows Algorithm 2 message by message on
// 0 ─ 1 ─ {2, 3}.
func TestFloodByHand(t *testing.T) {
	type e = routed.Entry
	type s = send
	a := routed.NewFlood(1, "one", 0, []int{2, 3}, routed.NewBook(4))
	leaf := routed.NewFlood(2, "two", 1, nil, routed.NewBook(4))
	if got, want := plain(leaf.Start()), []s{{1, []e{{2, "two"}}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("leaf 2: Start = %v, want its address to its parent %v", got, want)
	}
	steps := []struct {
		from      int
		entries   []e
		wantSends []s
		wantFresh []e
	}{
		// 2 reports: it gets what 1 knows, 1 waits for 3.
		{2, []e{{2, "two"}}, []s{{2, []e{{1, "one"}}}}, []e{{2, "two"}}},
		// 3 reports: forwarded to 2, reply to 3, and 1 reports up.
		{3, []e{{3, "three"}}, []s{{2, []e{{3, "three"}}}, {3, []e{{1, "one"}, {2, "two"}}}, {0, []e{{1, "one"}, {2, "two"}, {3, "three"}}}}, []e{{3, "three"}}},
		// The parent's reply goes down to both children.
		{0, []e{{0, "zero"}}, []s{{2, []e{{0, "zero"}}}, {3, []e{{0, "zero"}}}}, []e{{0, "zero"}}},
	}
	for i, st := range steps {
		got, gotFresh, err := a.Receive(st.from, routed.EntriesOf(st.entries...))
		if err != nil {
			t.Fatalf("step %d: Receive from %d: %v", i, st.from, err)
		}
		sends, fresh := plain(got), gotFresh.Slice()
		if !reflect.DeepEqual(sends, st.wantSends) || !reflect.DeepEqual(fresh, st.wantFresh) {
			t.Fatalf("step %d: Receive(%d, %v) = %v, fresh %v; want %v, fresh %v", i, st.from, st.entries, sends, fresh, st.wantSends, st.wantFresh)
		}
	}
	if !a.Complete() || a.Known() != 4 {
		t.Errorf("daemon 1: Complete() = %v with %d known, want all 4", a.Complete(), a.Known())
	}
}

// send is a routed.Send with its entries as a plain list, to compare.
type send struct {
	To      int
	Entries []routed.Entry
}

func plain(sends []routed.Send) []send {
	out := make([]send, len(sends))
	for i, s := range sends {
		out[i] = send{s.To, s.Entries.Slice()}
	}
	return out
}

// TestLaunchHeldUntilLearned: mpirun launches at its start, before any
// daemon has called back: its router holds the launch for its whole Fanout
// (all n daemons with direct routing), then releases each exactly once as
// links come up and phase 2 brings the addresses in. It runs the daemons'
// protocol machine (the router's user) through the simulator, in lockstep
// and with random delays; daemon/protocol/sim/bounds_test.go checks the
// launch at every size.
func TestLaunchHeldUntilLearned(t *testing.T) {
	for _, name := range routed.Names {
		for _, order := range []string{"lockstep", "random"} {
			launches := map[int]int{}
			opt := sim.Options{
				Nodes: 12, Job: protocol.JobSpec{SpawnDegree: 2, Routed: name},
				App: protocol.Launch{Argv: []string{"app"}}, SpawnMS: 1, StartMS: 1,
				OnSend: func(_ int64, _, to int, msg protocol.Message) {
					if _, ok := msg.(protocol.Launch); ok {
						launches[to]++
					}
				},
			}
			if order == "random" {
				rng := rand.New(rand.NewPCG(1, 2))
				opt.Delay = func(int, int) int64 { return 1 + rng.Int64N(8) }
			}
			s := sim.New(opt)
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			top, _ := routed.New(name, 13, 2)
			if got, want := s.Machine(0).Held(), len(top.Fanout(0)); got != want {
				t.Errorf("%s, %s: mpirun holds %d launch messages at its start, want its whole Fanout, %d", name, order, got, want)
			}
			s.Run(0)
			if s.Status != 0 {
				t.Errorf("%s, %s: mpirun exited %d: %q", name, order, s.Status, s.Stderr)
			}
			for id := 1; id <= 12; id++ {
				if m := s.Machine(id); !m.Launched() || launches[id] != 1 || m.Held() != 0 {
					t.Errorf("%s, %s: daemon %d launched %v by %d messages and holds %d, want once and nothing",
						name, order, id, m.Launched(), launches[id], m.Held())
				}
			}
		}
	}
}

// TestPhase2MessagesExceedPaper pins what the bound in
// daemon/protocol/sim/bounds_test.go says: a daemon sends up to 1 +
// δ(δ+1)/2 + δ²·depth phase-2 messages, beyond the paper's O(δ² +
// h·(δ-1)) read as a bound on the messages sent, e.g. δ(δ+1)/2 + h·δ + 2.
// With n = 14 and δ = 2 (a complete binary tree of height 3) in lockstep,
// daemon 3 (depth 2, children 7 and 8) reported first to 1, which reported
// first to 0, so it hears 4 times from its parent (the reply, 4's report,
// and the two messages 1 gets from 0) and forwards each to both children:
// 1 + 3 + 2·4 = 12 > 3 + 4 + 2 = 9. The 4 messages from its parent are
// within the paper's h·(δ-1) + h: that is what it counts.
func TestPhase2MessagesExceedPaper(t *testing.T) {
	var sent, fromParent int
	s := sim.New(sim.Options{
		Nodes: 14, Job: protocol.JobSpec{SpawnDegree: 2, Routed: "radix"},
		// The ranks outlive phase 2 (15 rounds), which the job's end
		// would cut short.
		App: protocol.Launch{Argv: []string{"app"}}, SpawnMS: 1, StartMS: 1, RankMS: 1000,
		OnSend: func(_ int64, from, to int, msg protocol.Message) {
			if _, ok := msg.(protocol.Addrs); ok {
				sent += b2i(from == 3)
				fromParent += b2i(from == 1 && to == 3)
			}
		},
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	s.Run(0)
	if m := s.Machine(3); s.Status != 0 || m.Known() != 15 {
		t.Fatalf("mpirun exited %d; daemon 3 knows %d addresses, want all 15", s.Status, m.Known())
	}
	if fromParent != 4 || sent != 12 {
		t.Errorf("daemon 3 got %d phase-2 messages from its parent and sent %d, want 4 and 1 + 3 + 2·4 = 12", fromParent, sent)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFloodSkip: a skipped child is replaced by its children, and its
// tombstone (an empty address) reaches everyone so phase 2 still completes.
func TestFloodSkip(t *testing.T) {
	// 0 ─ 1 ─ 2 ─ 3: daemon 2 is skipped, 1 adopts 3.
	root := routed.NewFlood(0, "a0", -1, []int{1}, routed.NewBook(4))
	one := routed.NewFlood(1, "a1", 0, []int{2}, routed.NewBook(4))
	three := routed.NewFlood(3, "a3", 1, nil, routed.NewBook(4))
	sends, fresh, err := one.Skip(2, []int{3})
	if err != nil || len(sends) != 0 || fresh.Len() != 1 || fresh.Slice()[0] != (routed.Entry{ID: 2}) {
		t.Fatalf("Skip = %v, %v, %v", sends, fresh, err)
	}
	if _, _, err := one.Skip(2, nil); err == nil {
		t.Fatal("skipping twice must fail")
	}
	up := three.Start()
	sends, _, err = one.Receive(3, up[0].Entries)
	if err != nil {
		t.Fatal(err)
	}
	var toRoot routed.Entries
	for _, s := range sends {
		switch s.To {
		case 0:
			toRoot = s.Entries
		case 3:
			three.Receive(1, s.Entries)
		}
	}
	down, _, err := root.Receive(1, toRoot)
	if err != nil || !root.Complete() {
		t.Fatalf("root incomplete after 1 reported (%v): knows %d", err, root.Known())
	}
	if addr, ok := root.Lookup(2); !ok || addr != "" {
		t.Fatalf("root's entry for the skipped daemon = %q, %v; want a tombstone", addr, ok)
	}
	for _, s := range down {
		sends, _, _ := one.Receive(0, s.Entries)
		for _, s := range sends {
			three.Receive(1, s.Entries)
		}
	}
	if !one.Complete() || !three.Complete() {
		t.Fatalf("daemons 1 and 3 know %d and %d of 4", one.Known(), three.Known())
	}
}
