package routed_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"prsh/routed"
)

// TestRanges checks the span set against a plain set of ids under random
// additions, and its queries against that set.
func TestRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var r routed.Ranges
		want := map[int]bool{}
		for range 1 + rng.IntN(8) {
			lo := rng.IntN(40)
			hi := lo + rng.IntN(6)
			r.Add(lo, hi)
			for id := lo; id < hi; id++ {
				want[id] = true
			}
		}
		if r.Len() != len(want) {
			t.Fatalf("round %d: Len %d, want %d (%v)", round, r.Len(), len(want), r.Spans())
		}
		for i, s := range r.Spans() {
			if s.Lo >= s.Hi || i > 0 && r.Spans()[i-1].Hi >= s.Lo {
				t.Fatalf("round %d: spans not sorted, disjoint and apart: %v", round, r.Spans())
			}
		}
		for id := -1; id < 50; id++ {
			if r.Contains(id) != want[id] {
				t.Fatalf("round %d: Contains(%d) = %v", round, id, !want[id])
			}
		}
		o := routed.RangesOf(rng.IntN(50), rng.IntN(50))
		in, all := false, true
		for _, s := range o.Spans() {
			for id := s.Lo; id < s.Hi; id++ {
				in, all = in || want[id], all && want[id]
			}
		}
		if r.Intersects(o) != in || r.ContainsAll(o) != all {
			t.Fatalf("round %d: %v against %v: Intersects %v, ContainsAll %v", round, r.Spans(), o.Spans(), r.Intersects(o), r.ContainsAll(o))
		}
		rest := r.Without(o)
		for id := -1; id < 50; id++ {
			if rest.Contains(id) != (want[id] && !o.Contains(id)) {
				t.Fatalf("round %d: %v without %v = %v", round, r.Spans(), o.Spans(), rest.Spans())
			}
		}
	}
}

// TestEntriesRope: a concatenation lists its parts in order, finds an
// id's position, and travels as the plain JSON list of entries.
func TestEntriesRope(t *testing.T) {
	e := func(ids ...int) routed.Entries {
		var es []routed.Entry
		for _, id := range ids {
			es = append(es, routed.Entry{ID: id, Addr: "a" + string(rune('0'+id))})
		}
		return routed.EntriesOf(es...)
	}
	rope := routed.Concat(e(1), routed.Entries{}, routed.Concat(e(4), e(3, 7, 8)), e(2))
	ids := func(es []routed.Entry) []int {
		var out []int
		for _, x := range es {
			out = append(out, x.ID)
		}
		return out
	}
	if got := ids(rope.Slice()); !slices.Equal(got, []int{1, 4, 3, 7, 8, 2}) || rope.Len() != 6 {
		t.Fatalf("rope = %v (len %d), want [1 4 3 7 8 2]", got, rope.Len())
	}
	if i, ok := rope.IndexOf(7); !ok || i != 3 {
		t.Errorf("IndexOf(7) = %d, %v; want 3", i, ok)
	}
	if _, ok := rope.IndexOf(5); ok {
		t.Error("IndexOf(5): found an id the rope does not hold")
	}
	b, err := json.Marshal(rope)
	if err != nil {
		t.Fatal(err)
	}
	var plain []routed.Entry
	var back routed.Entries
	if json.Unmarshal(b, &plain) != nil || json.Unmarshal(b, &back) != nil || !reflect.DeepEqual(plain, rope.Slice()) || !reflect.DeepEqual(back.Slice(), plain) {
		t.Errorf("JSON %s: as []Entry %v, back %v", b, plain, back.Slice())
	}
	if b, _ := json.Marshal(routed.Entries{}); string(b) != "null" {
		t.Errorf("empty list as JSON: %s, want null as a nil []Entry", b)
	}
}

// TestAllgatherLearnsOnce: what a daemon learns from a message is the
// entries in range it did not know, in the message's order, each id once,
// whether the message is taken whole or sorted out part by part.
func TestAllgatherLearnsOnce(t *testing.T) {
	a := routed.NewAllgather(0, "a0", -1, []int{1, 2}, routed.NewBook(10))
	one := []routed.Entry{{1, "a1"}, {5, "a5"}, {6, "a6"}}
	if _, fresh, _ := a.Receive(1, routed.EntriesOf(one...)); !reflect.DeepEqual(fresh.Slice(), one) {
		t.Fatalf("all new: fresh %v, want %v", fresh.Slice(), one)
	}
	// Known ids (0, 5), a repeat (7), ids out of range (-1, 10, 12).
	msg := routed.Concat(
		routed.EntriesOf(routed.Entry{2, "a2"}, routed.Entry{7, "a7"}, routed.Entry{5, "other"}),
		routed.EntriesOf(routed.Entry{-1, "x"}, routed.Entry{0, "other"}, routed.Entry{7, "again"}, routed.Entry{9, "a9"}, routed.Entry{10, "x"}, routed.Entry{12, "x"}))
	_, fresh, err := a.Receive(2, msg)
	want := []routed.Entry{{2, "a2"}, {7, "a7"}, {9, "a9"}}
	if err != nil || !reflect.DeepEqual(fresh.Slice(), want) {
		t.Fatalf("mixed: fresh %v, %v; want %v", fresh.Slice(), err, want)
	}
	for id, addr := range map[int]string{0: "a0", 5: "a5", 7: "a7", 9: "a9"} {
		if got, ok := a.Lookup(id); !ok || got != addr {
			t.Errorf("Lookup(%d) = %q, %v; want the first address heard, %q", id, got, ok, addr)
		}
	}
	if _, ok := a.Lookup(3); ok || a.Known() != 7 {
		t.Errorf("knows %d addresses (3: %v), want 7 and not 3", a.Known(), ok)
	}
}
