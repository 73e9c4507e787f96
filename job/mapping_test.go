package job

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// h is shorthand for a host in test tables.
func h(name string, slots, maxSlots int) Host { return Host{name, slots, maxSlots} }

func TestParseMapBy(t *testing.T) {
	tests := []struct {
		in   string
		want MapBy
	}{
		{"slot", MapBySlot}, {"core", MapBySlot}, {"hwthread", MapBySlot}, {"", MapBySlot},
		{"node", MapByNode}, {" NODE ", MapByNode}, {"Slot", MapBySlot},
	}
	for _, tt := range tests {
		got, err := ParseMapBy(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseMapBy(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for in, want := range map[string]string{
		"socket":       `unknown --map-by value "socket" (want slot, node, core, hwthread, socket, numa, l3cache or ppr:N:node)`,
		"nodes":        `unknown --map-by value "nodes"`,
		"ppr:2:socket": `--map-by "ppr:2:socket": only ppr:N:node is supported`,
		"ppr:0:node":   `--map-by "ppr:0:node": count must be at least 1`,
		"ppr:x:node":   `--map-by "ppr:x:node": count "x" is not a positive whole number`,
		"ppr:2":        `only ppr:N:node`,
	} {
		if _, _, err := ParseMapping(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMapping(%q) error = %v, want %q", in, err, want)
		}
	}
	for in, want := range map[string]int{"ppr:4:node": 4, "PPR:1:Node": 1, "node": 0} {
		if _, per, err := ParseMapping(in); err != nil || per != want {
			t.Errorf("ParseMapping(%q) = %d, %v; want %d per node", in, per, err, want)
		}
	}
}

func TestMapByString(t *testing.T) {
	for m, want := range map[MapBy]string{MapBySlot: "slot", MapByNode: "node", 7: "MapBy(7)"} {
		if got := m.String(); got != want {
			t.Errorf("MapBy(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}

func TestBuild(t *testing.T) {
	a2b2 := []Host{h("a", 2, 0), h("b", 2, 0)}
	a1b3 := []Host{h("a", 1, 0), h("b", 3, 0)}
	tests := []struct {
		name  string
		hosts []Host
		opt   Options
		nodes []string // names of the merged nodes; nil = names of hosts
		want  []int
	}{
		// Open MPI's classic placements.
		{"by slot", a2b2, Options{NP: 4}, nil, []int{0, 0, 1, 1}},
		{"by node", a2b2, Options{NP: 4, MapBy: MapByNode}, nil, []int{0, 1, 0, 1}},
		{"by slot partial", a2b2, Options{NP: 3}, nil, []int{0, 0, 1}},
		{"by node partial", a2b2, Options{NP: 3, MapBy: MapByNode}, nil, []int{0, 1, 0}},
		{"one rank", a2b2, Options{NP: 1, MapBy: MapByNode}, nil, []int{0}},
		{"by slot uneven", a1b3, Options{NP: 4}, nil, []int{0, 1, 1, 1}},
		// PE=N: each rank takes N slots.
		{"PE=2 default np", []Host{h("a", 4, 0), h("b", 4, 0)}, Options{PE: 2}, nil, []int{0, 0, 1, 1}},
		{"PE=2 by node", []Host{h("a", 4, 0), h("b", 4, 0)}, Options{NP: 3, PE: 2, MapBy: MapByNode}, nil, []int{0, 1, 0}},
		{"PE=2 odd slots", []Host{h("a", 5, 0), h("b", 2, 0)}, Options{PE: 2}, nil, []int{0, 0, 1}},
		{"PE=2 npernode", []Host{h("a", 4, 0), h("b", 4, 0)}, Options{NPerNode: 2, PE: 2}, nil, []int{0, 0, 1, 1}},
		{"PE=4 oversubscribed small host", []Host{h("a", 2, 0)}, Options{NP: 2, PE: 4, Oversubscribe: true}, nil, []int{0, 0}},
		{"by node skips full", a1b3, Options{NP: 4, MapBy: MapByNode}, nil, []int{0, 1, 1, 1}},
		{"by node skips full mid", []Host{h("a", 1, 0), h("b", 2, 0), h("c", 3, 0)},
			Options{NP: 6, MapBy: MapByNode}, nil, []int{0, 1, 2, 1, 2, 2}},
		{"oversubscribed flag unused", a2b2, Options{NP: 4, MapBy: MapByNode, Oversubscribe: true}, nil, []int{0, 1, 0, 1}},

		// Oversubscription: the excess goes round robin.
		{"oversubscribed by slot", a2b2, Options{NP: 6, Oversubscribe: true}, nil, []int{0, 0, 1, 1, 0, 1}},
		{"oversubscribed by slot uneven", a1b3, Options{NP: 7, Oversubscribe: true}, nil, []int{0, 1, 1, 1, 0, 1, 0}},
		{"oversubscribed by node", a1b3, Options{NP: 6, MapBy: MapByNode, Oversubscribe: true}, nil, []int{0, 1, 0, 1, 0, 1}},
		{"max_slots by slot", []Host{h("a", 2, 3), h("b", 2, 0)}, Options{NP: 8, Oversubscribe: true},
			nil, []int{0, 0, 1, 1, 0, 1, 1, 1}},
		{"max_slots by node", []Host{h("a", 1, 2), h("b", 1, 0)}, Options{NP: 5, MapBy: MapByNode, Oversubscribe: true},
			nil, []int{0, 1, 0, 1, 1}},
		{"max_slots exactly reached", []Host{h("a", 2, 3), h("b", 2, 2)}, Options{NP: 5, Oversubscribe: true},
			nil, []int{0, 0, 1, 1, 0}},

		// Duplicates merge in order of first mention.
		{"merge", []Host{h("b", 1, 0), h("a", 1, 0), h("b", 1, 0)}, Options{NP: 3}, []string{"b", "a"}, []int{0, 0, 1}},
		{"merge max_slots", []Host{h("a", 1, 3), h("a", 1, 0)}, Options{NP: 3, Oversubscribe: true}, []string{"a"}, []int{0, 0, 0}},

		// Defaults: one rank per slot, or -npernode per node.
		{"default", a2b2, Options{}, nil, []int{0, 0, 1, 1}},
		{"default by node", a2b2, Options{MapBy: MapByNode}, nil, []int{0, 1, 0, 1}},
		{"npernode", []Host{h("a", 2, 0), h("b", 2, 0), h("c", 2, 0)}, Options{NPerNode: 2}, nil, []int{0, 0, 1, 1, 2, 2}},
		{"npernode by node", []Host{h("a", 2, 0), h("b", 2, 0), h("c", 2, 0)}, Options{NPerNode: 2, MapBy: MapByNode},
			nil, []int{0, 1, 2, 0, 1, 2}},
		{"npernode with np", []Host{h("a", 2, 0), h("b", 2, 0), h("c", 2, 0)}, Options{NP: 4, NPerNode: 2},
			nil, []int{0, 0, 1, 1}},
		{"npernode with np by node", []Host{h("a", 2, 0), h("b", 2, 0), h("c", 2, 0)},
			Options{NP: 4, NPerNode: 2, MapBy: MapByNode}, nil, []int{0, 1, 2, 0}},
		{"npernode below slots", []Host{h("a", 4, 0), h("b", 4, 0)}, Options{NPerNode: 1}, nil, []int{0, 1}},
		{"npernode oversubscribed", []Host{h("a", 1, 0), h("b", 1, 0)}, Options{NPerNode: 2, Oversubscribe: true},
			nil, []int{0, 0, 1, 1}},
		{"npernode huge with np", []Host{h("a", 1, 0), h("b", 1, 0)}, Options{NP: 2, NPerNode: MaxRanks, Oversubscribe: true},
			nil, []int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Build(tt.hosts, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.RankNode, tt.want) {
				t.Errorf("RankNode = %v, want %v", m.RankNode, tt.want)
			}
			want := tt.nodes
			if want == nil {
				for _, h := range tt.hosts {
					want = append(want, h.Name)
				}
			}
			if got := nodeNames(m); !slices.Equal(got, want) {
				t.Errorf("nodes = %v, want %v", got, want)
			}
		})
	}
}

func nodeNames(m *Map) []string {
	var names []string
	for _, h := range m.Nodes {
		names = append(names, h.Name)
	}
	return names
}

func TestBuildMergedSlots(t *testing.T) {
	m, err := Build([]Host{h("a", 1, 0), h("b", 2, 4), h("a", 3, 5), h("b", 1, 0)}, Options{NP: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Host{h("a", 4, 5), h("b", 3, 4)}; !slices.Equal(m.Nodes, want) {
		t.Errorf("Nodes = %v, want %v", m.Nodes, want)
	}
}

func TestBuildErrors(t *testing.T) {
	a2b2 := []Host{h("a", 2, 0), h("b", 2, 0)}
	many := []Host{h("a", 1, 1), h("b", 1, 1), h("c", 1, 1), h("d", 1, 1), h("e", 1, 1), h("f", 1, 1)}
	tests := []struct {
		name  string
		hosts []Host
		opt   Options
		want  string
	}{
		{"no hosts", nil, Options{}, "no hosts given"},
		{"empty name", []Host{h("", 1, 0)}, Options{}, "empty host name"},
		{"bad name", []Host{h("-a", 1, 0)}, Options{}, `host name "-a" must not start with '-'`},
		{"zero slots", []Host{h("a", 0, 0)}, Options{}, "host a: slots must be at least 1 (got 0)"},
		{"huge slots", []Host{h("a", MaxHostSlots+1, 0)}, Options{}, "host a: slots=1048577 is more than the limit of 1048576"},
		{"negative max_slots", []Host{h("a", 1, -1)}, Options{}, "host a: max_slots must not be negative (got -1; 0 means no limit)"},
		{"huge max_slots", []Host{h("a", 1, MaxHostSlots+1)}, Options{}, "host a: max_slots=1048577 is more than the limit"},
		{"slots above max_slots", []Host{h("a", 3, 2)}, Options{}, "host a: slots=3 exceeds max_slots=2"},
		{"merged above max_slots", []Host{h("a", 2, 2), h("a", 1, 0)}, Options{}, "host a: slots=3 exceeds max_slots=2"},
		{"merged too many slots", []Host{h("a", MaxHostSlots, 0), h("a", 1, 0)}, Options{}, "host a: slots add up to 1048577"},
		{"negative np", a2b2, Options{NP: -1}, "-np must not be negative (got -1)"},
		{"negative npernode", a2b2, Options{NPerNode: -2}, "-npernode must not be negative (got -2)"},
		{"np too big", a2b2, Options{NP: MaxRanks + 1, Oversubscribe: true}, "-np 16777217 is more than the limit of 16777216 ranks"},
		{"bad policy", a2b2, Options{NP: 1, MapBy: 9}, "unknown mapping policy MapBy(9)"},
		{"not enough slots", a2b2, Options{NP: 5}, "-np 5 exceeds the 4 slots available; use --oversubscribe to allow it"},
		{"not enough slots by node", a2b2, Options{NP: 64, MapBy: MapByNode}, "-np 64 exceeds the 4 slots available; use --oversubscribe to allow it"},
		{"max_slots one host", []Host{h("a", 2, 3)}, Options{NP: 4, Oversubscribe: true},
			"-np 4 exceeds the 3 ranks that max_slots allows on host a"},
		{"max_slots without oversubscribe", []Host{h("a", 2, 3), h("b", 1, 1)}, Options{NP: 5},
			"-np 5 exceeds the 4 ranks that max_slots allows on hosts a, b"},
		{"max_slots many hosts", many, Options{NP: 7, Oversubscribe: true},
			"-np 7 exceeds the 6 ranks that max_slots allows on hosts a, b, c, d and 2 more"},
		{"np above npernode", a2b2, Options{NP: 5, NPerNode: 2},
			"-np 5 exceeds the 4 ranks that -npernode 2 allows on 2 nodes; raise it or add hosts"},
		{"npernode above slots", []Host{h("a", 4, 0), h("b", 2, 0)}, Options{NPerNode: 3},
			"-npernode 3 puts 3 ranks on host b, which has 2 slots; use --oversubscribe to allow it"},
		{"npernode above max_slots", []Host{h("a", 2, 2)}, Options{NPerNode: 3, Oversubscribe: true},
			"-npernode 3 puts 3 ranks on host a, above its max_slots=2"},
		{"PE=2 not enough slots", a2b2, Options{NP: 3, PE: 2},
			"3 ranks of PE=2 take 6 slots, more than the 4 slots available; use --oversubscribe to allow it"},
		{"PE=2 npernode not enough slots", a2b2, Options{NPerNode: 2, PE: 2},
			"4 ranks of PE=2 take 8 slots, more than the 4 slots available"},
		{"PE=4 small host", []Host{h("a", 4, 0), h("b", 2, 0)}, Options{NP: 1, PE: 4},
			"host b has 2 slots, fewer than the 4 each rank takes (PE=4); use --oversubscribe to allow it"},
		{"PE=4 max_slots", []Host{h("a", 2, 3)}, Options{NP: 2, PE: 4, Oversubscribe: true},
			"-np 2 exceeds the 1 ranks that max_slots allows on host a"},
		{"negative PE", a2b2, Options{NP: 1, PE: -1}, "PE=-1: want a count of cores from 1 to"},
		{"npernode too many ranks", a2b2, Options{NPerNode: MaxRanks, Oversubscribe: true},
			"-npernode 16777216 on 2 nodes is more than the limit of 16777216 ranks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Build(tt.hosts, tt.opt)
			if err == nil {
				t.Fatalf("got map %v, want error %q", m.RankNode, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestMapQueries(t *testing.T) {
	m := &Map{Nodes: []Host{h("a", 2, 0), h("b", 2, 0), h("c", 1, 0)}, RankNode: []int{1, 0, 1, 0, 1}}
	if got := m.Size(); got != 5 {
		t.Errorf("Size = %d, want 5", got)
	}
	for node, want := range [][]int{{1, 3}, {0, 2, 4}, nil, nil} {
		if got := m.RanksOn(node); !slices.Equal(got, want) {
			t.Errorf("RanksOn(%d) = %v, want %v", node, got, want)
		}
	}
	if got := m.RanksOn(-1); got != nil {
		t.Errorf("RanksOn(-1) = %v, want nil", got)
	}
	want := []int{0, 0, 1, 1, 2}
	for r, w := range want {
		if got := m.LocalRank(r); got != w {
			t.Errorf("LocalRank(%d) = %d, want %d", r, got, w)
		}
	}
	for _, r := range []int{-1, 5} {
		if got := m.LocalRank(r); got != -1 {
			t.Errorf("LocalRank(%d) = %d, want -1", r, got)
		}
	}
	if got := m.LocalRanks(); !slices.Equal(got, want) {
		t.Errorf("LocalRanks = %v, want %v", got, want)
	}
	if got := m.Daemon(1); got != 1 {
		t.Errorf("Daemon(1) = %d, want 1 (node 0 is daemon 1)", got)
	}
}

// TestBuildInvariants checks every small configuration: a successful map
// never breaks a slot rule, and by-slot placement without oversubscription
// fills nodes in order, as Open MPI does.
func TestBuildInvariants(t *testing.T) {
	for _, hosts := range smallHostLists() {
		for np := 0; np <= 9; np++ {
			for per := 0; per <= 3; per++ {
				for _, opt := range []Options{
					{NP: np, NPerNode: per}, {NP: np, NPerNode: per, MapBy: MapByNode},
					{NP: np, NPerNode: per, Oversubscribe: true},
					{NP: np, NPerNode: per, MapBy: MapByNode, Oversubscribe: true},
				} {
					m, err := Build(hosts, opt)
					if err != nil {
						checkErrorJustified(t, hosts, opt, err)
						continue
					}
					checkMap(t, hosts, opt, m)
				}
			}
		}
	}
}

// smallHostLists returns host lists of 1 to 3 nodes with 1 to 3 slots and
// max_slots none, equal to slots, or one more.
func smallHostLists() [][]Host {
	var one []Host
	for slots := 1; slots <= 3; slots++ {
		for _, maxSlots := range []int{0, slots, slots + 1} {
			one = append(one, Host{Slots: slots, MaxSlots: maxSlots})
		}
	}
	lists := [][]Host{nil}
	var all [][]Host
	for n := 0; n < 3; n++ {
		var next [][]Host
		for _, l := range lists {
			for _, x := range one {
				x.Name = fmt.Sprintf("n%d", n)
				next = append(next, append(slices.Clone(l), x))
			}
		}
		all = append(all, next...)
		lists = next
	}
	return all
}

func checkMap(t *testing.T, hosts []Host, opt Options, m *Map) {
	t.Helper()
	np, total := opt.NP, totalSlots(hosts)
	switch {
	case np == 0 && opt.NPerNode > 0:
		np = opt.NPerNode * len(hosts)
	case np == 0:
		np = total // one rank per slot
	}
	if m.Size() != np {
		t.Errorf("%v %+v: %d ranks, want %d", hosts, opt, m.Size(), np)
	}
	for i, h := range m.Nodes {
		c := len(m.RanksOn(i))
		if h.MaxSlots > 0 && c > h.MaxSlots || !opt.Oversubscribe && c > h.Slots ||
			opt.NPerNode > 0 && c > opt.NPerNode {
			t.Errorf("%v %+v: %d ranks on %s", hosts, opt, c, h.Name)
		}
	}
	if opt.MapBy == MapBySlot && opt.NPerNode == 0 && np <= total {
		for r := 1; r < np; r++ {
			prev, cur := m.RankNode[r-1], m.RankNode[r]
			if cur < prev || cur > prev && len(m.RanksOn(prev)) != hosts[prev].Slots {
				t.Errorf("%v %+v: by-slot map %v does not fill in order", hosts, opt, m.RankNode)
				return
			}
		}
	}
}

// checkErrorJustified fails if Build refused a job that fits.
func checkErrorJustified(t *testing.T, hosts []Host, opt Options, err error) {
	t.Helper()
	capacity, limited := hardCapacity(hosts)
	switch {
	case opt.NPerNode > 0:
		return // checked by TestBuildErrors; the rules are per node
	case limited && opt.NP > capacity:
	case !opt.Oversubscribe && opt.NP > totalSlots(hosts):
	default:
		t.Errorf("%v %+v: unexpected error %v", hosts, opt, err)
	}
}

// TestMoveFirst: the node moved comes first, the others keep their order,
// and each rank stays on its host.
func TestMoveFirst(t *testing.T) {
	m := &Map{Nodes: []Host{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}, RankNode: []int{0, 1, 2, 3, 2, 0}}
	for node := range m.Nodes {
		moved, newIndex := m.MoveFirst(node)
		if moved.Nodes[0].Name != m.Nodes[node].Name {
			t.Errorf("move %d: first is %s", node, moved.Nodes[0].Name)
		}
		var rest []string
		for _, h := range moved.Nodes[1:] {
			rest = append(rest, h.Name)
		}
		var want []string
		for i, h := range m.Nodes {
			if i != node {
				want = append(want, h.Name)
			}
		}
		if !slices.Equal(rest, want) {
			t.Errorf("move %d: the others are %v, want %v", node, rest, want)
		}
		for r, n := range m.RankNode {
			if got := moved.Nodes[moved.RankNode[r]].Name; got != m.Nodes[n].Name {
				t.Errorf("move %d: rank %d on %s, want %s", node, r, got, m.Nodes[n].Name)
			}
			if newIndex[n] != moved.RankNode[r] {
				t.Errorf("move %d: newIndex[%d] = %d, rank %d is on %d", node, n, newIndex[n], r, moved.RankNode[r])
			}
		}
	}
}

func TestWithRanks(t *testing.T) {
	m := &Map{Nodes: []Host{{Name: "a", Slots: 1}, {Name: "b", Slots: 2}, {Name: "c", Slots: 3}, {Name: "d", Slots: 4}, {Name: "e", Slots: 5}},
		RankNode: []int{3, 1, 3, 1}}
	used, idle := m.WithRanks()
	var names []string
	for _, h := range used.Nodes {
		names = append(names, h.Name)
	}
	if !slices.Equal(names, []string{"b", "d"}) {
		t.Errorf("used nodes %v, want [b d]", names)
	}
	if !slices.Equal(idle, []Host{{Name: "a", Slots: 1}, {Name: "c", Slots: 3}, {Name: "e", Slots: 5}}) {
		t.Errorf("idle %v, want a, c and e with their slots", idle)
	}
	for r, n := range m.RankNode {
		if got := used.Nodes[used.RankNode[r]]; got != m.Nodes[n] {
			t.Errorf("rank %d on %v, want %v", r, got, m.Nodes[n])
		}
	}
	if all, none := used.WithRanks(); len(none) != 0 || !slices.Equal(all.Nodes, used.Nodes) {
		t.Errorf("a map of used nodes only: %v idle", none)
	}
}
