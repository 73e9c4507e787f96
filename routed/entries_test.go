package routed_test

import (
	"encoding/json"
	"fmt"
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
	var back routed.Entries
	if json.Unmarshal(b, &back) != nil || !reflect.DeepEqual(back.Slice(), rope.Slice()) {
		t.Errorf("JSON %s came back as %v", b, back.Slice())
	}
}

// TestFloodLearnsOnce: what a daemon learns from a message is the
// entries in range it did not know, in the message's order, each id once,
// whether the message is taken whole or sorted out part by part.
func TestFloodLearnsOnce(t *testing.T) {
	a := routed.NewFlood(0, "a0", -1, []int{1, 2}, routed.NewBook(10))
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

// TestEntriesWire: the wire form is one string of runs, adjacent runs
// joined, and reads back to the same entries in the same order; what does
// not parse, or numbers ids past the largest int, is refused.
func TestEntriesWire(t *testing.T) {
	rope := routed.Concat(routed.EntriesOf(routed.Entry{ID: 1, Addr: "a1"}, routed.Entry{ID: 2, Addr: "a2"}),
		routed.EntriesOf(routed.Entry{ID: 3, Addr: "a3"}, routed.Entry{ID: 4, Addr: ""}),
		routed.EntriesOf(routed.Entry{ID: 5, Addr: "a5"}, routed.Entry{ID: 0, Addr: ""}, routed.Entry{ID: 9, Addr: "a9"}))
	b, err := json.Marshal(rope)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"1 a1 a2 a3  a5,0 ,9 a9"`; string(b) != want {
		t.Errorf("wire form %s, want %s", b, want)
	}
	var back routed.Entries
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Slice(), rope.Slice()) {
		t.Errorf("read back %v (%v), want %v", back.Slice(), err, rope.Slice())
	}
	if b, _ := json.Marshal(routed.Entries{}); string(b) != `""` {
		t.Errorf("empty list: %s", b)
	}
	var empty routed.Entries
	if err := json.Unmarshal([]byte(`""`), &empty); err != nil || empty.Len() != 0 {
		t.Errorf(`"" read as %v (%v)`, empty.Slice(), err)
	}
	for _, bad := range []string{`"9223372036854775807 x y"`, `"x a"`, `"5"`, `"1 a,"`, `"1 a,,2 b"`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: read without an error as %v", bad, back.Slice())
		}
	}
	if err := json.Unmarshal([]byte(`"-2 n"`), &back); err != nil || back.Len() != 1 {
		t.Errorf("a negative id, for the receiver to refuse: %v, %v", back.Slice(), err)
	}
	for _, addr := range []string{"a b", "a,b"} {
		if _, err := json.Marshal(routed.EntriesOf(routed.Entry{ID: 1, Addr: addr})); err == nil {
			t.Errorf("address %q encoded", addr)
		}
	}
	// Runs that continue one another read as one, as they are written.
	var split, joined routed.Entries
	json.Unmarshal([]byte(`"1 a,2 b"`), &split)
	json.Unmarshal([]byte(`"1 a b"`), &joined)
	if !reflect.DeepEqual(split, joined) {
		t.Errorf("1 a,2 b read as %#v, 1 a b as %#v", split, joined)
	}
}

// BenchmarkEntriesWire encodes and decodes the flood's whole address
// list as a daemon receives it: consecutive subtrees of a radix tree, one
// part per subtree. "entries" is the former wire form, an {ID, Addr}
// object per entry, for comparison.
func BenchmarkEntriesWire(b *testing.B) {
	for _, n := range []int{512, 8192} {
		var parts []routed.Entries
		for lo := 1; lo <= n; lo += 64 {
			var es []routed.Entry
			for id := lo; id < min(lo+64, n+1); id++ {
				es = append(es, routed.Entry{ID: id, Addr: fmt.Sprintf("tcp://10.%d.%d.%d:%d", id>>16, id>>8&255, id&255, 30000+id%30000)})
			}
			parts = append(parts, routed.EntriesOf(es...))
		}
		all := routed.Concat(parts...)
		b.Run(fmt.Sprintf("runs/%d", n), func(b *testing.B) {
			for b.Loop() {
				w, _ := json.Marshal(all)
				var back routed.Entries
				if err := json.Unmarshal(w, &back); err != nil || back.Len() != n {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(w)))
			}
		})
		b.Run(fmt.Sprintf("entries/%d", n), func(b *testing.B) {
			for b.Loop() {
				w, _ := json.Marshal(all.Slice())
				var back []routed.Entry
				if err := json.Unmarshal(w, &back); err != nil || len(back) != n {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(w)))
			}
		})
	}
}
