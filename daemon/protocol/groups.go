package protocol

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"prsh/modex/collective"
)

// Fences over a group (a subset of a job's ranks, PMIx_Fence with a list
// of processes) are collectives of their own, beside the job's: the
// group's name is its ranks, sorted, as ranges ("0-3,8"), so that every
// daemon on the way derives from the name alone who takes part below it
// (PROTOCOL.md, "Collectives over a group"). Only the daemons whose
// subtree holds a member take part; one that holds none never hears of
// the group.

// GroupName is the collective group of a fence over ranks (sorted, no
// duplicates): consecutive ranks as ranges, "0-3,8".
func GroupName(ranks []int) string {
	var b strings.Builder
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ranks[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(ranks[j]))
		}
		i = j + 1
	}
	return b.String()
}

// GroupRanks is the ranks a group's name lists, in order, if it is
// well formed and names ranks of a job of size ranks only.
func GroupRanks(name string, size int) ([]int, bool) {
	var ranks []int
	for _, field := range strings.Split(name, ",") {
		lo, hi, isRange := strings.Cut(field, "-")
		first, err := strconv.Atoi(lo)
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(hi)
		}
		if err != nil || first < 0 || last < first || last >= size || (len(ranks) > 0 && first <= ranks[len(ranks)-1]) {
			return nil, false
		}
		for r := first; r <= last; r++ {
			ranks = append(ranks, r)
		}
	}
	return ranks, true
}

// joinGroup makes job j's collectives know group name here, once its
// ranks are started (before, the group waits with the children's parts
// that named it). A local member that already left leaves the group at
// once. False: the name lists no ranks of the job.
func (m *Machine) joinGroup(j *jobState, name string) bool {
	if j.groups[name] {
		return true
	}
	if IsAcross(name) {
		return m.joinAcross(j, name)
	}
	if j.launch != ranksStarted {
		if !slices.Contains(j.earlyGroups, name) {
			j.earlyGroups = append(j.earlyGroups, name)
		}
		return true
	}
	ranks, ok := GroupRanks(name, len(j.app.RankNode))
	if !ok {
		m.warn("job %d: a collective over %q, which names no ranks of the job", j.num, name)
		return false
	}
	j.groups[name] = true
	m.collectives(j, j.coll.Join(name, func() collective.Members { return m.groupMembers(j.app, ranks) }))
	for _, r := range ranks {
		if rk := j.ranks[r]; rk != nil && (rk.reaped || rk.finalized) {
			m.collectives(j, j.coll.Left(name, r))
		}
	}
	return true
}

// joinEarlyGroups joins the groups that children named before job j's
// ranks started here.
func (m *Machine) joinEarlyGroups(j *jobState) {
	early := j.earlyGroups
	j.earlyGroups = nil
	for _, name := range early {
		m.joinGroup(j, name)
	}
}

// groupMembers is who takes part in a group's collectives here: its
// local ranks, and the live children whose subtree holds one of them.
func (m *Machine) groupMembers(app Launch, ranks []int) collective.Members {
	nodes := map[int]bool{}
	mem := collective.Members{Toward: func(rank int) int { return m.towardRank(app, rank) }}
	for _, r := range ranks {
		nodes[app.RankNode[r]] = true
		if app.RankNode[r] == m.self {
			mem.Ranks = append(mem.Ranks, r)
		}
	}
	mem.Children = m.childrenHolding(nodes)
	mem.Below = func(child int) []int {
		var below []int
		for _, r := range ranks {
			if m.towardRank(app, r) == child {
				below = append(below, r)
			}
		}
		return below
	}
	return mem
}

// childrenHolding lists, in id order, the live children whose subtree
// holds one of nodes.
func (m *Machine) childrenHolding(nodes map[int]bool) []int {
	holding := map[int]bool{}
	for d := range nodes {
		if c := m.childToward(d); c >= 0 {
			holding[c] = true
		}
	}
	return slices.Sorted(maps.Keys(holding))
}

// leaveGroups: local rank of job j will enter no more fences (it
// finalised or exited); the group fences it did not enter fail.
func (m *Machine) leaveGroups(j *jobState, rank int) {
	for _, name := range slices.Sorted(maps.Keys(j.groups)) {
		if !IsAcross(name) {
			m.collectives(j, j.coll.Left(name, rank))
		}
	}
	m.leaveAcross(j.num, rank)
}

// fenceGroup is the collective group of a fence a rank entered.
func fenceGroup(e FenceEntered) string {
	if e.Group == nil {
		return jobGroup
	}
	return GroupName(e.Group)
}
