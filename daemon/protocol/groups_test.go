package protocol

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A group's name gives back its ranks, for every subset of a job of up
// to 12 ranks and random ones of larger jobs; a name that is not sorted,
// repeats a rank or names one outside the job is refused.
func TestGroupNameRoundTrip(t *testing.T) {
	check := func(ranks []int, size int) {
		name := GroupName(ranks)
		got, ok := GroupRanks(name, size)
		if !ok || !slices.Equal(got, ranks) {
			t.Fatalf("%v → %q → %v %v", ranks, name, got, ok)
		}
	}
	for mask := 1; mask < 1<<12; mask++ {
		var ranks []int
		for r := range 12 {
			if mask&(1<<r) != 0 {
				ranks = append(ranks, r)
			}
		}
		check(ranks, 12)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		size := 1 + rng.IntN(5000)
		var ranks []int
		for r := range size {
			if rng.IntN(3) > 0 {
				ranks = append(ranks, r)
			}
		}
		if len(ranks) > 0 {
			check(ranks, size)
		}
	}
	for _, bad := range []string{"", "3,1", "1,1", "2-1", "0-4", "-1", "a", "1,,2", "0-1,1"} {
		if got, ok := GroupRanks(bad, 4); ok {
			t.Errorf("%q accepted as %v", bad, got)
		}
	}
	if name := GroupName([]int{0, 1, 2, 5, 7, 8}); name != "0-2,5,7-8" {
		t.Errorf("name %q", name)
	}
}
