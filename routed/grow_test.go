package routed

import (
	"slices"
	"testing"
)

// TestGrow: a message for an added daemon goes toward mpirun, which sends
// it straight on; an added daemon sends everything to mpirun; mpirun's
// broadcast reaches the added ones; the planned daemons route as before.
func TestGrow(t *testing.T) {
	for _, name := range Names {
		base, err := New(name, 9, 2)
		if err != nil {
			t.Fatal(err)
		}
		g := Grow(base, 11)   // daemons 9 and 10 added
		seen := Grow(base, 9) // a daemon that knows of none
		for self := range 9 {
			for dst := range 9 {
				if g.NextHop(self, dst) != base.NextHop(self, dst) {
					t.Errorf("%s: %d→%d changed", name, self, dst)
				}
			}
			for _, dst := range []int{9, 10} {
				want := base.NextHop(self, 0)
				if self == 0 {
					want = dst
				}
				if got := g.NextHop(self, dst); got != want {
					t.Errorf("%s: %d→%d goes via %d, want %d", name, self, dst, got, want)
				}
				if got := seen.NextHop(self, dst); got != want {
					t.Errorf("%s: %d→%d (added unknown) goes via %d, want %d", name, self, dst, got, want)
				}
			}
		}
		for _, dst := range []int{0, 3, 8, 9} {
			if got := g.NextHop(10, dst); got != 0 {
				t.Errorf("%s: 10→%d goes via %d, want 0", name, dst, got)
			}
		}
		want := append(slices.Clone(base.Fanout(0)), 9, 10)
		if got := g.Fanout(0); !slices.Equal(got, want) {
			t.Errorf("%s: mpirun's fanout %v, want %v", name, got, want)
		}
		if g.Fanout(9) != nil || !slices.Equal(g.Fanout(1), base.Fanout(1)) {
			t.Errorf("%s: fanout of 9 %v, of 1 %v", name, g.Fanout(9), g.Fanout(1))
		}
	}
}
