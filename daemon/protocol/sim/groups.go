package sim

import (
	"fmt"
	"slices"

	"prsh/daemon/protocol"
	"prsh/modex"
)

// Fences over groups of ranks (Options.Groups): each member puts one key
// and must get its group's keys back, and nothing else.

// groupsOf lists the groups rank is in, in Options.Groups order.
func (s *Sim) groupsOf(rank int) [][]int {
	var in [][]int
	for _, g := range s.opt.Groups {
		if slices.Contains(g, rank) {
			in = append(in, g)
		}
	}
	return in
}

// enterGroupFence makes rank r enter the fence of its next group.
func (s *Sim) enterGroupFence(d *daemon, r rankID) {
	st := d.ranks[r]
	g := s.groupsOf(r.rank)[st.groups]
	st.groups++
	st.inGroup = protocol.GroupName(g)
	kv := modex.KV{Key: fmt.Sprintf("group-%s-%d", protocol.GroupName(g), r.rank), Value: fmt.Sprintf("v%d", r.rank)}
	s.step(d, protocol.FenceEntered{Job: r.job, Rank: r.rank, Puts: []modex.KV{kv}, Group: g})
}

// groupFenceDone checks that a group's fence gave its members' keys
// only, or failed naming the members that left; then its local members
// go on.
func (s *Sim) groupFenceDone(d *daemon, a protocol.FenceDone) {
	var want []string
	members, _ := protocol.GroupRanks(a.Group, len(s.opt.App.RankNode))
	for _, r := range members {
		if !slices.Contains(a.Gone, r) {
			want = append(want, fmt.Sprintf("group-%s-%d", a.Group, r))
		}
	}
	var got []string
	for _, kv := range a.Puts {
		got = append(got, kv.Key)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		s.Errors = append(s.Errors, fmt.Sprintf("d%d: group fence %s gave %v, want %v", d.id, a.Group, got, want))
	}
	s.goOn(d, a.Job, func(st *rankState) bool {
		in := st.inGroup == a.Group
		if in {
			st.inGroup = ""
		}
		return in
	})
}
