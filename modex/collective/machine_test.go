package collective

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"prsh/internal/purity"
	"prsh/modex"
)

func TestPure(t *testing.T) { purity.Check(t, "prsh/modex/collective") }

func members(ranks, children []int) func() Members {
	return func() Members {
		return Members{Ranks: ranks, Children: children, Toward: func(int) int { return Nowhere }}
	}
}

func kv(key string) Part { return Part{KVs: []modex.KV{{Key: key, Value: "v" + key}}} }

func keys(p Part) []string {
	var ks []string
	for _, kv := range p.KVs {
		ks = append(ks, kv.Key)
	}
	slices.Sort(ks)
	return ks
}

func fence(seq int) ID { return ID{Op: Fence, Seq: seq} }

// permutations lists every order of xs.
func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := slices.Concat(xs[:i], xs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}

// An inner daemon with n children and its local ranks sends its subtree's
// part up exactly once, when the last part comes, in whatever order the
// parts come, and it holds every part. Ranks are numbered from 100,
// children from 1.
func TestInnerSendsUpOnceEveryPartIsIn(t *testing.T) {
	for _, tt := range []struct{ children, ranks int }{{0, 1}, {1, 0}, {1, 1}, {2, 2}, {3, 1}, {4, 0}} {
		var children, ranks, parts []int
		for c := 1; c <= tt.children; c++ {
			children = append(children, c)
			parts = append(parts, c)
		}
		for r := 100; r < 100+tt.ranks; r++ {
			ranks = append(ranks, r)
			parts = append(parts, r)
		}
		for _, order := range permutations(parts) {
			t.Run(fmt.Sprint(tt.children, "children", tt.ranks, "ranks", order), func(t *testing.T) {
				m := New(false)
				m.Join("", members(ranks, children))
				var want []string
				for i, p := range order {
					want = append(want, fmt.Sprint(p))
					var acts []Action
					if p >= 100 {
						acts = m.Enter("", Fence, p, kv(fmt.Sprint(p)))
					} else {
						acts = m.FromChild(p, fence(1), kv(fmt.Sprint(p)))
					}
					if i < len(order)-1 {
						if len(acts) != 0 {
							t.Fatalf("after %v of %v: %v", order[:i+1], order, acts)
						}
						continue
					}
					up, ok := only[SendUp](t, acts)
					slices.Sort(want)
					if !ok || up.ID != fence(1) || !slices.Equal(keys(up.Part), want) {
						t.Fatalf("got %v, want one SendUp of fence 1 with %v", acts, want)
					}
				}
				if open := m.Open(); len(open) != 0 {
					t.Fatalf("still open: %v", open)
				}
			})
		}
	}
}

func only[A Action](t *testing.T, acts []Action) (A, bool) {
	t.Helper()
	var zero A
	if len(acts) != 1 {
		return zero, false
	}
	a, ok := acts[0].(A)
	return a, ok
}

// The root completes the collective: the result goes down to every child
// that takes part, in id order, then to the local ranks.
func TestRootBroadcastsTheResult(t *testing.T) {
	m := New(true)
	m.Join("", members([]int{0}, []int{3, 1}))
	m.FromChild(3, fence(1), kv("c3"))
	m.Enter("", Fence, 0, kv("r0"))
	acts := m.FromChild(1, fence(1), kv("c1"))
	result := Part{KVs: []modex.KV{{Key: "c3", Value: "vc3"}, {Key: "r0", Value: "vr0"}, {Key: "c1", Value: "vc1"}}}
	want := []Action{SendDown{1, fence(1), result}, SendDown{3, fence(1), result}, Done{fence(1), result}}
	if !reflect.DeepEqual(acts, want) {
		t.Fatalf("got %v, want %v", acts, want)
	}
}

// A daemon passes a result from its parent on to its children that take
// part, and hands it to its ranks, whether or not it had the collective
// open.
func TestResultPassesDown(t *testing.T) {
	m := New(false)
	m.Join("", members([]int{7}, []int{2}))
	acts := m.FromParent(ID{Op: Allgather, Seq: 1}, Part{Ordered: []string{"a", "b"}})
	res := Part{Ordered: []string{"a", "b"}}
	want := []Action{SendDown{2, ID{Op: Allgather, Seq: 1}, res}, Done{ID{Op: Allgather, Seq: 1}, res}}
	if !reflect.DeepEqual(acts, want) {
		t.Fatalf("got %v, want %v", acts, want)
	}
}

// A child that fails midway is dropped: the open collective completes
// without it, a later one does not wait for it, and no result goes to it.
func TestFailedChildIsNeverWaitedFor(t *testing.T) {
	m := New(true)
	m.Join("", members(nil, []int{1, 2, 3}))
	m.FromChild(1, fence(1), kv("c1"))
	m.FromChild(2, fence(1), kv("c2"))
	acts := m.ChildFailed(3)
	if len(acts) != 3 || !reflect.DeepEqual(acts[2], Done{fence(1), Part{KVs: []modex.KV{{Key: "c1", Value: "vc1"}, {Key: "c2", Value: "vc2"}}}}) {
		t.Fatalf("fence 1 did not complete without the failed child: %v", acts)
	}
	for _, a := range acts {
		if s, ok := a.(SendDown); ok && s.Child == 3 {
			t.Fatalf("the result went to the failed child: %v", acts)
		}
	}
	m.FromChild(1, fence(2), kv("c1"))
	if acts := m.FromChild(3, fence(2), kv("c3")); len(acts) != 0 {
		t.Fatalf("a failed child's part was taken: %v", acts)
	}
	acts = m.FromChild(2, fence(2), kv("c2"))
	if len(acts) != 3 {
		t.Fatalf("fence 2 waited for the failed child: %v", acts)
	}
	if d, ok := acts[2].(Done); !ok || !slices.Equal(keys(d.Part), []string{"c1", "c2"}) {
		t.Fatalf("fence 2 completed with %v, want the live children's parts only", acts[2])
	}
}

// Parts that come before the launch are held, and taken when the daemon
// joins: those of members count, others are dropped.
func TestEarlyPartsAreReplayedAtTheLaunch(t *testing.T) {
	m := New(false)
	if acts := m.FromChild(1, fence(1), kv("c1")); len(acts) != 0 {
		t.Fatalf("a part went on before the launch: %v", acts)
	}
	m.FromChild(9, fence(1), kv("stranger"))
	m.FromChild(2, ID{Op: Ring, Seq: 1}, Part{Ring: []RingEntry{{Rank: 4, Count: 1}}})
	acts := m.Join("", members(nil, []int{1}))
	up, ok := only[SendUp](t, acts[:1])
	if len(acts) != 1 || !ok || !slices.Equal(keys(up.Part), []string{"c1"}) {
		t.Fatalf("at the launch: %v, want fence 1 up with c1 only", acts)
	}
	if open := m.Open(); len(open) != 0 {
		t.Fatalf("open: %v, want none (child 2 takes no part: its ring opens nothing)", open)
	}
}

// Early parts wait for the local ranks like any other: the launch takes
// them, the ranks' entries complete the collective.
func TestEarlyPartsWaitForTheLocalRanks(t *testing.T) {
	m := New(false)
	m.FromChild(1, fence(1), kv("c1"))
	if acts := m.Join("", members([]int{0}, []int{1})); len(acts) != 0 {
		t.Fatalf("went up before the local rank entered: %v", acts)
	}
	if acts := m.Enter("", Fence, 0, kv("r0")); len(acts) != 1 {
		t.Fatalf("the local rank's entry did not complete fence 1: %v", acts)
	}
}

// A collective over part of the job: only the member ranks and the
// children whose subtree holds members take part; others are ignored.
func TestPartialParticipation(t *testing.T) {
	m := New(false)
	m.Join("g", members([]int{5}, []int{2}))
	if acts := m.Enter("g", Fence, 4, kv("r4")); len(acts) != 0 {
		t.Fatalf("a rank outside the group entered: %v", acts)
	}
	if acts := m.FromChild(1, ID{Group: "g", Op: Fence, Seq: 1}, kv("c1")); len(acts) != 0 {
		t.Fatalf("a child outside the group took part: %v", acts)
	}
	m.Enter("g", Fence, 5, kv("r5"))
	acts := m.FromChild(2, ID{Group: "g", Op: Fence, Seq: 1}, kv("c2"))
	up, ok := only[SendUp](t, acts)
	if !ok || up.ID.Group != "g" || !slices.Equal(keys(up.Part), []string{"c2", "r5"}) {
		t.Fatalf("got %v, want group g's fence 1 up with c2 and r5", acts)
	}
}

// Several collectives at once (two groups, several operations, several
// sequence numbers) each keep their own parts and complete on their own.
func TestSeveralCollectivesAtOnce(t *testing.T) {
	m := New(false)
	m.Join("", members([]int{0, 1}, []int{1}))
	m.Join("g", members([]int{1}, nil))
	m.Enter("", Fence, 0, kv("f1r0"))
	m.Enter("", Fence, 0, kv("f2r0")) // rank 0 goes on to fence 2 (an error in PMI, not here)
	m.Enter("", Ring, 1, Part{Ring: []RingEntry{{Rank: 1}}})
	if acts := m.Enter("g", Fence, 1, kv("g1r1")); !reflect.DeepEqual(acts, []Action{SendUp{ID{Group: "g", Op: Fence, Seq: 1}, kv("g1r1")}}) {
		t.Fatalf("group g's fence: %v", acts)
	}
	if want := []ID{fence(1), fence(2), {Op: Ring, Seq: 1}}; !slices.Equal(m.Open(), want) {
		t.Fatalf("open %v, want %v", m.Open(), want)
	}
	m.Enter("", Fence, 1, kv("f1r1"))
	acts := m.FromChild(1, fence(1), kv("f1c1"))
	up, ok := only[SendUp](t, acts)
	if !ok || up.ID != fence(1) || !slices.Equal(keys(up.Part), []string{"f1c1", "f1r0", "f1r1"}) {
		t.Fatalf("fence 1: %v", acts)
	}
}

// A rank that left (finalised) no longer holds the job's collectives,
// but fails each one it did not enter: its part names it gone.
func TestLeftRankFailsTheJobsCollectives(t *testing.T) {
	m := New(false)
	m.Join("", members([]int{0, 1}, nil))
	m.Enter("", Fence, 0, kv("r0"))
	up, ok := only[SendUp](t, m.Left("", 1))
	if !ok || up.ID != fence(1) || !slices.Equal(up.Part.Gone, []int{1}) {
		t.Fatalf("fence 1: got %v, want its part sent up with rank 1 gone", up)
	}
	up, ok = only[SendUp](t, m.Enter("", Fence, 0, kv("r0")))
	if !ok || up.ID != fence(2) || !slices.Equal(up.Part.Gone, []int{1}) {
		t.Fatalf("fence 2: got %v, want its part sent up with rank 1 gone", up)
	}
}

// below is Members whose children 2 and 4 each hold two ranks: 20, 21
// and 40, 41.
func below(ranks, children []int) func() Members {
	return func() Members {
		mem := members(ranks, children)()
		mem.Below = func(c int) []int { return []int{c * 10, c*10 + 1} }
		return mem
	}
}

// A child whose ranks all left counts as come in the job's collectives
// it sent no part of, open or to come, with its ranks gone; those it
// sent a part of are not touched, and a group's are not either.
func TestChildLeftFailsTheJobsCollectives(t *testing.T) {
	m := New(true)
	m.Join("", below([]int{0}, []int{2, 4}))
	m.Join("0,40", below([]int{0}, []int{4}))
	m.Enter("", Fence, 0, kv("r0"))
	m.FromChild(2, fence(1), kv("c2"))
	m.Enter("", Fence, 0, kv("r0"))
	m.Enter("0,40", Fence, 0, kv("r0"))
	acts := m.ChildLeft(4)
	gone := []int{40, 41}
	want := []Action{
		SendDown{2, fence(1), Part{KVs: append(kv("r0").KVs, kv("c2").KVs...), Gone: gone}},
		Done{fence(1), Part{KVs: append(kv("r0").KVs, kv("c2").KVs...), Gone: gone}},
	}
	if !reflect.DeepEqual(acts, want) {
		t.Fatalf("ChildLeft:\n got %v\nwant %v", acts, want)
	}
	if open := m.Open(); !slices.Equal(open, []ID{fence(2), {Group: "0,40", Op: Fence, Seq: 1}}) {
		t.Fatalf("open: %v", open)
	}
	acts = m.FromChild(2, fence(2), Part{})
	if d, ok := acts[len(acts)-1].(Done); !ok || d.ID != fence(2) || !slices.Equal(d.Part.Gone, gone) {
		t.Fatalf("fence 2: %v", acts)
	}
	m.Enter("", Allgather, 0, Part{})
	acts = m.FromChild(2, ID{Op: Allgather, Seq: 1}, Part{})
	if d, ok := acts[len(acts)-1].(Done); !ok || !slices.Equal(d.Part.Gone, gone) {
		t.Fatalf("an allgather opened after ChildLeft: %v", acts)
	}
}

// An ending job completes no collective of its own; a result from the
// parent still passes.
func TestEndStopsCompletion(t *testing.T) {
	m := New(false)
	m.Join("", members([]int{0, 1}, []int{1}))
	m.Enter("", Fence, 0, kv("r0"))
	m.FromChild(1, fence(1), kv("c1"))
	m.End()
	if acts := m.Enter("", Fence, 1, kv("r1")); len(acts) != 0 {
		t.Fatalf("a collective completed in an ending job: %v", acts)
	}
	if acts := m.FromParent(fence(1), kv("x")); len(acts) != 2 {
		t.Fatalf("a result from the parent did not pass: %v", acts)
	}
}

// A second part from a child, and a part of an unknown operation, are
// ignored.
func TestUnexpectedPartsAreIgnored(t *testing.T) {
	m := New(false)
	m.Join("", members([]int{0}, []int{1}))
	m.FromChild(1, fence(1), kv("c1"))
	m.FromChild(1, fence(1), kv("again"))
	m.FromChild(1, ID{Op: 99, Seq: 1}, kv("odd"))
	m.FromParent(ID{Op: 0, Seq: 1}, kv("odd"))
	acts := m.Enter("", Fence, 0, kv("r0"))
	up, ok := only[SendUp](t, acts)
	if !ok || !slices.Equal(keys(up.Part), []string{"c1", "r0"}) {
		t.Fatalf("got %v", acts)
	}
}

// A child's part of a collective that completed here already (sent
// again, or late) neither completes it twice nor leaves it open.
func TestLatePartDoesNotReopen(t *testing.T) {
	for _, root := range []bool{false, true} {
		m := New(root)
		m.Join("", members([]int{0}, []int{1}))
		m.FromChild(1, fence(1), kv("c1"))
		if acts := m.Enter("", Fence, 0, kv("r0")); len(acts) == 0 {
			t.Fatalf("root %v: fence 1 did not complete", root)
		}
		if acts := m.FromChild(1, fence(1), kv("again")); len(acts) != 0 {
			t.Errorf("root %v: a late part completed fence 1 again: %v", root, acts)
		}
		if open := m.Open(); len(open) != 0 {
			t.Errorf("root %v: a late part reopened %v", root, open)
		}
		m.FromChild(1, fence(2), kv("c1"))
		if acts := m.Enter("", Fence, 0, kv("r0")); len(acts) == 0 {
			t.Errorf("root %v: fence 2 did not complete after the late part", root)
		}
	}
}

// The root puts an allgather's values in rank order.
func TestAllgatherInRankOrder(t *testing.T) {
	m := New(true)
	m.Join("", members([]int{1}, []int{1}))
	m.FromChild(1, ID{Op: Allgather, Seq: 1}, Part{Values: []RankValue{{2, "c"}, {0, "a"}}})
	acts := m.Enter("", Allgather, 1, Part{Values: []RankValue{{1, "b"}}})
	want := Part{Ordered: []string{"a", "b", "c"}}
	if len(acts) != 2 || !reflect.DeepEqual(acts[1], Done{ID{Op: Allgather, Seq: 1}, want}) {
		t.Fatalf("got %v, want %v for every daemon", acts, want)
	}
}

// The ring's answers are scattered: each child gets those of the ranks
// below it, the local ranks theirs, and a rank nowhere below is dropped.
func TestRingScattersTheAnswers(t *testing.T) {
	where := map[int]int{0: Here, 1: 1, 2: 2, 3: 1, 4: Nowhere}
	m := New(true)
	m.Join("", func() Members {
		return Members{Ranks: []int{0}, Children: []int{1, 2}, Toward: func(r int) int { return where[r] }}
	})
	entry := func(r int) RingEntry {
		return RingEntry{Rank: r, Count: 1, Left: fmt.Sprint("l", r), Right: fmt.Sprint("r", r)}
	}
	m.FromChild(1, ID{Op: Ring, Seq: 1}, Part{Ring: []RingEntry{entry(1), entry(3)}})
	m.FromChild(2, ID{Op: Ring, Seq: 1}, Part{Ring: []RingEntry{entry(2), entry(4)}})
	acts := m.Enter("", Ring, 0, Part{Ring: []RingEntry{entry(0)}})
	answer := func(r int) RingEntry {
		return RingEntry{Rank: r, Count: r, Left: fmt.Sprint("r", (r+4)%5), Right: fmt.Sprint("l", (r+1)%5)}
	}
	id := ID{Op: Ring, Seq: 1}
	want := []Action{
		SendDown{1, id, Part{Ring: []RingEntry{answer(1), answer(3)}}},
		SendDown{2, id, Part{Ring: []RingEntry{answer(2)}}},
		Done{id, Part{Ring: []RingEntry{answer(0)}}},
	}
	if !reflect.DeepEqual(acts, want) {
		t.Fatalf("got %v\nwant %v", acts, want)
	}
}

// A ring that a rank left before entering fails everywhere: every
// share of its answers, the children's and the local ranks', names the
// rank gone, not only the daemon's where it left.
func TestRingLeftFailsEveryShare(t *testing.T) {
	where := map[int]int{0: Here, 3: Here, 1: 1, 2: 2}
	m := New(true)
	m.Join("", func() Members {
		return Members{Ranks: []int{0, 3}, Children: []int{1, 2}, Toward: func(r int) int { return where[r] }}
	})
	entry := func(r int) RingEntry { return RingEntry{Rank: r, Count: 1} }
	m.Left("", 3)
	m.FromChild(1, ID{Op: Ring, Seq: 1}, Part{Ring: []RingEntry{entry(1)}})
	m.FromChild(2, ID{Op: Ring, Seq: 1}, Part{Ring: []RingEntry{entry(2)}})
	acts := m.Enter("", Ring, 0, Part{Ring: []RingEntry{entry(0)}})
	if len(acts) != 3 {
		t.Fatalf("got %v, want two SendDowns and a Done", acts)
	}
	for _, a := range acts {
		var gone []int
		switch a := a.(type) {
		case SendDown:
			gone = a.Part.Gone
		case Done:
			gone = a.Part.Gone
		}
		if !reflect.DeepEqual(gone, []int{3}) {
			t.Errorf("%+v: gone %v, want [3]", a, gone)
		}
	}
}

// A tree of machines, driven with every part in a random order, gives
// every daemon the same fence result with every rank's put, whatever the
// shape.
func TestTreeOfMachines(t *testing.T) {
	for _, n := range []int{1, 2, 5, 13} {
		for seed := range 5 {
			runTree(t, n, seed)
		}
	}
}

// runTree runs one fence over n daemons in a binary tree, daemon i
// holding rank i, delivering the pending events in an order seed picks.
func runTree(t *testing.T, n, seed int) {
	t.Helper()
	parent := func(i int) int { return (i - 1) / 2 }
	ms := make([]*Machine, n)
	for i := range ms {
		ms[i] = New(i == 0)
		var children []int
		for c := 2*i + 1; c <= 2*i+2 && c < n; c++ {
			children = append(children, c)
		}
		ms[i].Join("", members([]int{i}, children))
	}
	var pending []func() (int, []Action)
	for i := range n {
		pending = append(pending, func() (int, []Action) { return i, ms[i].Enter("", Fence, i, kv(fmt.Sprint(i))) })
	}
	done := map[int][]string{}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(seed)))
	for len(pending) > 0 {
		k := rng.IntN(len(pending))
		next := pending[k]
		pending = slices.Delete(pending, k, k+1)
		at, acts := next()
		for _, a := range acts {
			switch a := a.(type) {
			case SendUp:
				pending = append(pending, func() (int, []Action) { return parent(at), ms[parent(at)].FromChild(at, a.ID, a.Part) })
			case SendDown:
				pending = append(pending, func() (int, []Action) { return a.Child, ms[a.Child].FromParent(a.ID, a.Part) })
			case Done:
				if _, twice := done[at]; twice {
					t.Fatalf("n=%d seed=%d: daemon %d completed the fence twice", n, seed, at)
				}
				done[at] = keys(a.Part)
			}
		}
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprint(i))
	}
	slices.Sort(want)
	for i := range n {
		if !slices.Equal(done[i], want) {
			t.Fatalf("n=%d seed=%d: daemon %d got %v, want %v", n, seed, i, done[i], want)
		}
	}
}
