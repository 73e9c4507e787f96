package topo_test

import (
	"testing"

	"prsh/topo"
)

// TestSubtreeSize checks the counting shortcut of radix trees against a
// walk of the subtree, for every vertex of many trees.
func TestSubtreeSize(t *testing.T) {
	for size := 1; size <= 90; size++ {
		for _, degree := range []int{1, 2, 3, 4, 8, 32, 100} {
			tr := topo.Radix(size, degree)
			for id := range size {
				if got, want := topo.SubtreeSize(tr, id), 1+len(topo.Subtree(tr, id)); got != want {
					t.Fatalf("Radix(%d, %d): SubtreeSize(%d) = %d, want %d", size, degree, id, got, want)
				}
			}
		}
	}
	if got := topo.SubtreeSize(topo.Binomial(16), 0); got != 16 {
		t.Errorf("Binomial(16): SubtreeSize(0) = %d, want 16", got)
	}
}
