package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"

	"prsh/daemon/protocol"
	"prsh/topo"
)

// Jobs without PMIx on random subsets of random DVMs, several at once:
// each sparse job's Launch reaches exactly the daemons that hold its
// ranks and their spawn ancestors, a job on every node reaches every
// daemon, every job ends with 0, the DVM stops with 0 and nothing is
// left running.
func TestSparseJobsReachTheirNodesOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 7))
	launch := regexp.MustCompile(`^ *\d+ d\d+ -> d(\d+) Launch job (\d+) `)
	done := regexp.MustCompile(`^ *\d+ d0 job (\d+) done: status (\d+)$`)
	for run := range 60 {
		nodes, degree := 2+rng.IntN(40), 2+rng.IntN(5)
		routedBy := []string{"radix", "binomial", "direct"}[rng.IntN(3)]
		name := fmt.Sprintf("run %d: %d nodes, δ=%d, %s", run, nodes, degree, routedBy)
		reached := map[int]map[int]bool{} // job → daemons its Launch reached
		status := map[int]int{}
		opt := Options{SpawnMS: 10, StartMS: 5, RankMS: 100, Faults: map[int]Fault{}, RankStatus: map[int]int{}}
		opt.Nodes = nodes
		opt.Job = protocol.JobSpec{Routed: routedBy, SpawnDegree: degree, KillGraceMS: 3000, DVM: true}
		opt.Trace = func(line string) {
			if m := launch.FindStringSubmatch(line); m != nil {
				job := atoi(m[2])
				if reached[job] == nil {
					reached[job] = map[int]bool{}
				}
				reached[job][atoi(m[1])] = true
			}
			if m := done.FindStringSubmatch(line); m != nil {
				status[atoi(m[1])] = atoi(m[2])
			}
		}
		s := New(opt)
		jobs := map[int][]int{} // job → the daemon of each rank
		for job := 1; job <= 6; job++ {
			var rankNode []int
			if job == 6 {
				for d := 1; d <= nodes; d++ {
					rankNode = append(rankNode, d)
				}
			} else {
				for range 1 + rng.IntN(3) {
					rankNode = append(rankNode, 1+rng.IntN(nodes))
				}
				slices.Sort(rankNode)
			}
			jobs[job] = rankNode
			at := int64(100 + 30*job)
			s.At(at, func() { s.Submit(job, nil, 50+int64(rng.IntN(200)), true, rankNode...) })
		}
		s.At(2000, s.StopDVM)
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		s.Run(60_000)
		tree := topo.Radix(nodes+1, degree)
		for job, rankNode := range jobs {
			want := map[int]bool{}
			for _, d := range rankNode {
				for p := d; p > 0; p = tree.Parent(p) {
					want[p] = true
				}
			}
			if got := slices.Sorted(maps.Keys(reached[job])); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
				t.Errorf("%s: job %d on %v reached %v, want %v", name, job, rankNode, got, slices.Sorted(maps.Keys(want)))
			}
			if st, ok := status[job]; !ok || st != 0 {
				t.Errorf("%s: job %d ended %v (status %d), want with 0", name, job, ok, st)
			}
		}
		if s.Status != 0 || len(s.Running()) > 0 || len(s.Errors) > 0 {
			t.Errorf("%s: the DVM ended with %d, left %v running, errors %v", name, s.Status, s.Running(), s.Errors)
		}
	}
}
