package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"prsh/daemon/protocol"
)

// Fences over random groups of ranks on random trees, with a job fence
// beside them and, in some runs, a member that leaves: every group's
// fence completes on every daemon that holds a member with its members'
// keys only (or fails naming those who left), the job's fails naming it,
// and the job ends with 0.
// The simulator checks each completion (groupFenceDone).
func TestRandomGroupFences(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	runs := 300
	if testing.Short() {
		runs = 60
	}
	completed, failed := 0, 0 // group fences done at a daemon, of which failed
	count := func(line string) {
		if strings.Contains(line, " done: ") && strings.Contains(line, ", gone [") {
			completed++
			if !strings.Contains(line, "gone []") {
				failed++
			}
		}
	}
	for run := range runs {
		nodes, ranks := 1+rng.IntN(12), 1+rng.IntN(24)
		opt := Options{Nodes: nodes, SpawnMS: 10, StartMS: 5, RankMS: 10, Faults: map[int]Fault{}, RankStatus: map[int]int{},
			Fences: rng.IntN(2), Leave: map[int]bool{}}
		opt.Job = protocol.JobSpec{Routed: "radix", SpawnDegree: 1 + rng.IntN(4), KillGraceMS: 3000}
		opt.App = protocol.Launch{Argv: []string{"app"}}
		opt.Trace = count
		for range ranks {
			opt.App.RankNode = append(opt.App.RankNode, 1+rng.IntN(nodes))
		}
		for range 1 + rng.IntN(3) {
			var g []int
			for r := range ranks {
				if rng.IntN(2) == 0 {
					g = append(g, r)
				}
			}
			if len(g) > 0 {
				opt.Groups = append(opt.Groups, g)
			}
		}
		if rng.IntN(3) == 0 {
			opt.Leave[rng.IntN(ranks)] = true // it fails the job's fences too
		}
		desc := fmt.Sprintf("run %d: %d nodes δ=%d ranks on %v, groups %v, leave %v, fences %d",
			run, nodes, opt.Job.SpawnDegree, opt.App.RankNode, opt.Groups, slices.Sorted(maps.Keys(opt.Leave)), opt.Fences)
		s := New(opt)
		if err := s.Start(); err != nil {
			t.Fatal(desc, err)
		}
		s.Run(10 * 60 * 1000)
		if s.Status != 0 || len(s.Errors) > 0 {
			t.Fatalf("%s: exit %d, errors %v", desc, s.Status, s.Errors)
		}
	}
	if completed == 0 || failed == 0 || failed == completed {
		t.Fatalf("%d group fences completed at a daemon, %d of them failed: the runs tried too little", completed, failed)
	}
	t.Logf("%d group fences completed at a daemon, %d of them failed", completed, failed)
}
