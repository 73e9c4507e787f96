package topo

import (
	"slices"
	"testing"
)

// TestGrown: the added ids are leaves under the root, the planned tree is
// unchanged, and an id past the grown size is still placed under the
// root (a daemon that knows fewer added daemons).
func TestGrown(t *testing.T) {
	for _, base := range []Tree{Radix(7, 2), Binomial(6), Star(4)} {
		g := Grown(base, base.Size()+3)
		if g.Size() != base.Size()+3 {
			t.Fatalf("size %d, want %d", g.Size(), base.Size()+3)
		}
		for id := 1; id < base.Size(); id++ {
			if g.Parent(id) != base.Parent(id) || !slices.Equal(g.Children(id), base.Children(id)) {
				t.Errorf("%T: id %d moved", base, id)
			}
		}
		want := append(slices.Clone(base.Children(0)), base.Size(), base.Size()+1, base.Size()+2)
		if got := g.Children(0); !slices.Equal(got, want) {
			t.Errorf("%T: root's children %v, want %v", base, got, want)
		}
		for id := base.Size(); id < base.Size()+5; id++ {
			if g.Parent(id) != 0 || g.Children(id) != nil {
				t.Errorf("%T: added %d has parent %d, children %v", base, id, g.Parent(id), g.Children(id))
			}
			if p := Grown(base, base.Size()).Parent(id); p != 0 {
				t.Errorf("%T: ungrown tree puts %d under %d", base, id, p)
			}
		}
		if n := SubtreeSize(g, 0); n != g.Size() {
			t.Errorf("%T: root's subtree %d, want %d", base, n, g.Size())
		}
		for id := range g.Size() {
			if a, b := SubtreeSize(g, id), 1+len(Subtree(g, id)); a != b {
				t.Errorf("%T: subtree of %d: %d, counted %d", base, id, a, b)
			}
		}
		if g2 := Grown(g, g.Size()+1); g2.Size() != base.Size()+4 || len(g2.Children(0)) != len(base.Children(0))+4 {
			t.Errorf("%T: growing again gave %d daemons", base, g2.Size())
		}
	}
}
