package mpirun

import (
	"slices"
	"testing"
)

// Every flag keeps its names and whether it takes a value once wrapped;
// none is left unwrapped (a new flag type would be missing from namedOnce).
func TestNamedOnceKeepsEveryFlag(t *testing.T) {
	plain, wrapped := flags(), namedOnce(flags())
	for i, f := range plain {
		w := wrapped[i]
		if !slices.Equal(f.Names(), w.Names()) {
			t.Errorf("flag %v: names %v once wrapped", f.Names(), w.Names())
		}
		if isSwitch(f) != isSwitch(w) {
			t.Errorf("flag %v: switch %v, wrapped %v", f.Names(), isSwitch(f), isSwitch(w))
		}
		if w == f {
			t.Errorf("flag %v (%T) is not wrapped", f.Names(), f)
		}
	}
}
