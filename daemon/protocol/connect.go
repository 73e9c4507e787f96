package protocol

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"prsh/modex/collective"
)

// Groups over several jobs: PMIx_Connect and PMIx_Disconnect between
// namespaces, and PMIx fences over processes of several namespaces, are
// fences over a group whose members are ranks of several jobs. Such a
// group is one of the groups of groups.go, kept by its first job (the
// lowest number, the group's host), so that the collectives, their
// messages and a member that leaves work as for a group of one job. Its
// name lists each job's ranks, "1:0-3|2:0,1", and its members are
// numbered in that order (rank 0 of job 2 is member 4 there).

// JobRanks is the ranks of one job in a group over several jobs,
// sorted, each once.
type JobRanks struct {
	Job   int
	Ranks []int
}

// AcrossName is the collective group of a fence over the ranks of
// several jobs, listed by job number.
func AcrossName(jobs []JobRanks) string {
	parts := make([]string, len(jobs))
	for i, jr := range jobs {
		parts[i] = strconv.Itoa(jr.Job) + ":" + GroupName(jr.Ranks)
	}
	return strings.Join(parts, "|")
}

// IsAcross says whether a group's name is that of a group over several
// jobs (a group of one job's ranks has no colon).
func IsAcross(name string) bool { return strings.Contains(name, ":") }

// jobRank is one member of a group over several jobs.
type jobRank struct{ job, rank int }

// acrossMembers reads a group's name back: its members in order, if
// well formed (jobs ascending, ranks within each job's size).
func (m *Machine) acrossMembers(name string) ([]jobRank, bool) {
	var members []jobRank
	last := -1
	for _, field := range strings.Split(name, "|") {
		num, ranks, _ := strings.Cut(field, ":")
		job, err := strconv.Atoi(num)
		j := m.jobs[job]
		if err != nil || job <= last || j == nil {
			return nil, false
		}
		list, ok := GroupRanks(ranks, len(j.app.RankNode))
		if !ok {
			return nil, false
		}
		for _, r := range list {
			members = append(members, jobRank{job, r})
		}
		last = job
	}
	return members, true
}

// acrossJobs lists the jobs a group's name names; nil if malformed.
func acrossJobs(name string) []int {
	var jobs []int
	for _, field := range strings.Split(name, "|") {
		num, _, _ := strings.Cut(field, ":")
		job, err := strconv.Atoi(num)
		if err != nil {
			return nil
		}
		jobs = append(jobs, job)
	}
	return jobs
}

// enterAcross: a local rank entered a fence over ranks of several jobs.
func (m *Machine) enterAcross(e FenceEntered) {
	name := AcrossName(e.Across)
	host := m.jobOf(e.Across[0].Job)
	_, r, ok := m.rankOf(e.Job, e.Rank)
	if host == nil || !ok || r.reaped || !m.joinGroup(host, name) {
		return
	}
	member := -1
	for i, p := range host.across[name] {
		if p == (jobRank{e.Job, e.Rank}) {
			member = i
		}
	}
	if member < 0 {
		return
	}
	r.pmi = true
	m.collectives(host, host.coll.Enter(name, collective.Fence, member, fencePart(e.Puts)))
}

// joinAcross makes host's collectives know a group over several jobs,
// once every job of it has its ranks started here (until then it waits
// among host's early groups). A local member that already left leaves
// the group at once. False: the name is malformed, or names a job over
// here.
func (m *Machine) joinAcross(host *jobState, name string) bool {
	jobs := acrossJobs(name)
	if len(jobs) == 0 || jobs[0] != host.num {
		m.warn("job %d: a collective over %q, which is not one of its groups", host.num, name)
		return false
	}
	for _, num := range jobs {
		if m.released.has(num) && m.jobs[num] == nil {
			m.warn("job %d: a collective over %q, whose job %d is over", host.num, name, num)
			return false
		}
		if j := m.jobs[num]; j == nil || j.launch != ranksStarted {
			if !slices.Contains(host.earlyGroups, name) {
				host.earlyGroups = append(host.earlyGroups, name)
			}
			return true
		}
	}
	members, ok := m.acrossMembers(name)
	if !ok {
		m.warn("job %d: a collective over %q, which names no ranks of its jobs", host.num, name)
		return false
	}
	host.groups[name] = true
	if host.across == nil {
		host.across = map[string][]jobRank{}
	}
	host.across[name] = members
	m.collectives(host, host.coll.Join(name, func() collective.Members { return m.acrossCollective(members) }))
	for i, p := range members {
		if _, rk, ok := m.rankOf(p.job, p.rank); ok && (rk.reaped || rk.finalized) {
			m.collectives(host, host.coll.Left(name, i))
		}
	}
	return true
}

// acrossCollective is who takes part in a group over several jobs here:
// the members on this node, and the live children whose subtree holds
// one.
func (m *Machine) acrossCollective(members []jobRank) collective.Members {
	where := make([]int, len(members))
	nodes := map[int]bool{}
	var mem collective.Members
	for i, p := range members {
		where[i] = m.jobs[p.job].app.RankNode[p.rank]
		nodes[where[i]] = true
		if where[i] == m.self {
			mem.Ranks = append(mem.Ranks, i)
		}
	}
	mem.Children = m.childrenHolding(nodes)
	mem.Toward = func(i int) int {
		switch {
		case i < 0 || i >= len(where):
			return collective.Nowhere
		case where[i] == m.self:
			return collective.Here
		}
		if c := m.childToward(where[i]); c >= 0 {
			return c
		}
		return collective.Nowhere
	}
	return mem
}

// leaveAcross: local rank of job will enter no more fences; the groups
// over several jobs that it is a member of, whichever job keeps them,
// fail those it did not enter.
func (m *Machine) leaveAcross(job, rank int) {
	for _, host := range m.sortedJobs() {
		for _, name := range slices.Sorted(maps.Keys(host.across)) {
			for i, p := range host.across[name] {
				if p == (jobRank{job, rank}) {
					m.collectives(host, host.coll.Left(name, i))
				}
			}
		}
	}
}

// joinWaitingAcross: job j's ranks started here; the groups over several
// jobs that waited for it may be joined now.
func (m *Machine) joinWaitingAcross(j *jobState) {
	for _, host := range m.sortedJobs() {
		if host != j && host.launch == ranksStarted && len(host.earlyGroups) > 0 {
			m.joinEarlyGroups(host)
		}
	}
}

// JobLaunch is job num's Launch, once it came here: every daemon gets
// every job's, so a daemon knows where the ranks of a job connected to
// its own are.
func (m *Machine) JobLaunch(num int) (Launch, bool) {
	j, ok := m.jobs[num]
	if !ok || len(j.app.RankNode) == 0 {
		return Launch{}, false
	}
	return j.app, true
}
