package sim

import (
	"fmt"
	"maps"
	"slices"

	"prsh/daemon/protocol"
	"prsh/modex"
)

// The PMI program every simulated rank runs when Options asks for
// collectives: its fences, then its allgathers, then its ring, then it
// finalises and runs RankMS. Each completion is checked against what
// every rank gave.

func (s *Sim) usesPMI() bool {
	return s.opt.Fences > 0 || s.opt.Allgathers > 0 || s.opt.Ring || len(s.opt.Groups) > 0
}

// nextCollective moves rank r on to its next step.
func (s *Sim) nextCollective(d *daemon, r rankID) {
	st := d.ranks[r]
	switch {
	case st == nil:
	case s.opt.Leave[r.rank]:
		s.finalize(d, r)
	case st.groups < len(s.groupsOf(r.rank)):
		s.enterGroupFence(d, r)
	case st.fences < s.opt.Fences:
		s.enterFence(d, r)
	case st.allgathers < s.opt.Allgathers:
		s.enterAllgather(d, r)
	case s.opt.Ring && !st.ringed:
		s.enterRing(d, r)
	default:
		s.finalize(d, r)
	}
}

// enterFence makes rank r enter its next fence with one key of its own.
func (s *Sim) enterFence(d *daemon, r rankID) {
	st := d.ranks[r]
	st.fences++
	kv := modex.KV{Key: fmt.Sprintf("card-%d-%d", r.rank, st.fences), Value: fmt.Sprintf("v%d", r.rank)}
	s.step(d, protocol.FenceEntered{Job: r.job, Rank: r.rank, Puts: []modex.KV{kv}})
}

// fenceDone checks that the fence committed every rank's key, then lets
// each local rank in it go on.
func (s *Sim) fenceDone(d *daemon, a protocol.FenceDone) {
	if protocol.IsAcross(a.Group) { // a scenario's (names.go): its trace tells
		return
	}
	if a.Group != "" {
		s.groupFenceDone(d, a)
		return
	}
	if len(a.Gone) > 0 || len(s.opt.Leave) > 0 {
		s.checkGone(d, a)
	} else if a.View.Len() != a.Seq*len(s.opt.App.RankNode) {
		s.Errors = append(s.Errors, fmt.Sprintf("d%d: after fence %d the view holds %d keys, want %d", d.id, a.Seq, a.View.Len(), a.Seq*len(s.opt.App.RankNode)))
	}
	s.goOn(d, a.Job, func(st *rankState) bool { return st.fences == a.Seq })
}

// checkGone checks that a job fence with ranks that left fails naming
// them all (a rank that leaves does so before its first fence).
func (s *Sim) checkGone(d *daemon, a protocol.FenceDone) {
	if want := slices.Sorted(maps.Keys(s.opt.Leave)); !slices.Equal(a.Gone, want) {
		s.Errors = append(s.Errors, fmt.Sprintf("d%d: fence %d failed for %v, want %v", d.id, a.Seq, a.Gone, want))
	}
}

// enterAllgather makes rank r enter its next allgather with a value
// naming the rank and the allgather.
func (s *Sim) enterAllgather(d *daemon, r rankID) {
	st := d.ranks[r]
	st.allgathers++
	s.step(d, protocol.AllgatherEntered{Job: r.job, Rank: r.rank, Value: gatherValue(r.rank, st.allgathers)})
}

func gatherValue(rank, seq int) string { return fmt.Sprintf("v%d.%d", rank, seq) }

// allgatherDone checks that every rank's value came, in rank order, then
// lets each local rank in the allgather go on.
func (s *Sim) allgatherDone(d *daemon, a protocol.AllgatherDone) {
	want := make([]string, len(s.opt.App.RankNode))
	for r := range want {
		want[r] = gatherValue(r, a.Seq)
	}
	if !slices.Equal(a.Values, want) {
		s.Errors = append(s.Errors, fmt.Sprintf("d%d: allgather %d gave %v, want %v", d.id, a.Seq, a.Values, want))
	}
	s.goOn(d, a.Job, func(st *rankState) bool { return st.allgathers == a.Seq })
}

// enterRing makes rank r enter a ring with count 1 and the value v<r>.
func (s *Sim) enterRing(d *daemon, r rankID) {
	d.ranks[r].ringed = true
	v := fmt.Sprintf("v%d", r.rank)
	s.step(d, protocol.RingEntered{Job: r.job, Rank: r.rank, Count: 1, Left: v, Right: v})
}

// ringDone checks each local rank's answer, then lets it go on.
func (s *Sim) ringDone(d *daemon, a protocol.RingDone) {
	np := len(s.opt.App.RankNode)
	for _, e := range a.Answers {
		want := protocol.RingEntry{Rank: e.Rank, Count: e.Rank, Left: fmt.Sprintf("v%d", (e.Rank+np-1)%np), Right: fmt.Sprintf("v%d", (e.Rank+1)%np)}
		if e != want {
			s.Errors = append(s.Errors, fmt.Sprintf("d%d: ring answer %+v, want %+v", d.id, e, want))
		}
		s.push(s.now+1, func() { s.nextCollective(d, rankID{a.Job, e.Rank}) })
	}
}

// goOn moves on, a millisecond later, each local rank that took part in
// the collective just completed, in rank order.
func (s *Sim) goOn(d *daemon, job int, tookPart func(*rankState) bool) {
	for _, r := range sortedRanks(d.ranks) {
		if r.job == job && tookPart(d.ranks[r]) {
			s.push(s.now+1, func() { s.nextCollective(d, r) })
		}
	}
}

func (s *Sim) finalize(d *daemon, r rankID) {
	s.step(d, protocol.PMIFinalize{Job: r.job, Rank: r.rank})
	s.runRank(d, r)
}
