package mpirun

import (
	"slices"
	"testing"
)

// TestCopyNumbers: --cc's lists in the order given, and the words it
// refuses.
func TestCopyNumbers(t *testing.T) {
	for in, want := range map[string][]int{"3": {3}, "1-4": {1, 2, 3, 4}, "0,4,8-10": {0, 4, 8, 9, 10}, " 7 , 2": {7, 2}} {
		if got, err := copyNumbers(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("copyNumbers(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "3-1", "-2", "1-", "1,,2", "0-2000000"} {
		if got, err := copyNumbers(in); err == nil {
			t.Errorf("copyNumbers(%q) = %v, want an error", in, got)
		}
	}
}
