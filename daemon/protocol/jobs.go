package protocol

import (
	"fmt"
	"maps"
	"slices"

	"prsh/errmgr"
	"prsh/modex"
	"prsh/modex/collective"
)

// A daemon's jobs: a plain mpirun has one, job 0, from its start to its
// end; a DVM has those its clients submitted, each from its Launch (or
// the first message of it that comes here) to its JobEnd, at once
// (DVM.md). Everything of a job is in its jobState, so that jobs never
// mix and one's end lets go of all it held.

// jobState is one job at this daemon.
type jobState struct {
	num    int
	launch launchState
	app    Launch
	ranks  map[int]*rank
	// earlyModex holds direct-modex requests for this daemon's ranks that
	// came before the launch did.
	earlyModex []ModexRequest
	// started and exited are the Started and Exited milestones' reductions;
	// left, that of RanksLeft (ranksleft.go).
	started, exited, left *reduction
	coll                  *collective.Machine // the PMI collectives (collectives.go)
	view                  modex.View          // what the fences committed so far
	// groups are the groups of ranks whose collectives were joined here;
	// earlyGroups, those named before the ranks started (groups.go).
	groups      map[string]bool
	earlyGroups []string
	// across are the members of the groups over several jobs that this
	// job keeps, by name (connect.go).
	across map[string][]jobRank
	// holders are the children a sparse job's messages go to (launch.go).
	holders []int
	// killed: a JobKill came (DVM): its ranks are being stopped, and no
	// more failures go up for it.
	killed bool

	// mpirun only: how it ends (the first failure wins), its --timeout.
	policy    errmgr.Policy
	timeoutMS int64
}

// newJob makes job num's state, its reductions waiting for children.
func (m *Machine) newJob(num int, children []int) *jobState {
	return &jobState{
		num: num, ranks: map[int]*rank{}, coll: collective.New(m.root != nil), groups: map[string]bool{},
		started: newReduction(children), exited: newReduction(children), left: newReduction(children),
	}
}

// liveChildren lists the children not given up on, in id order.
func (m *Machine) liveChildren() []int {
	live := []int{}
	for _, c := range m.sortedChildren() {
		if !c.failed {
			live = append(live, c.id)
		}
	}
	return live
}

// jobOf is job num's state, made at its first message here; nil for a
// job released here, or a job number that names none. Jobs from 1 are a
// DVM's, or a plain mpirun's child jobs (childjobs.go).
func (m *Machine) jobOf(num int) *jobState {
	if j, ok := m.jobs[num]; ok {
		return j
	}
	if num <= 0 || m.released.has(num) || m.ending() {
		return nil
	}
	j := m.newJob(num, m.liveChildren())
	m.jobs[num] = j
	return j
}

// sortedJobs lists the jobs in number order, so that the actions of a
// step do not depend on map order.
func (m *Machine) sortedJobs() []*jobState {
	out := make([]*jobState, 0, len(m.jobs))
	for _, n := range slices.Sorted(maps.Keys(m.jobs)) {
		out = append(out, m.jobs[n])
	}
	return out
}

// rankOf is local rank r of job num, if it is one.
func (m *Machine) rankOf(num, r int) (*jobState, *rank, bool) {
	j, ok := m.jobs[num]
	if !ok {
		return nil, nil, false
	}
	rk, ok := j.ranks[r]
	return j, rk, ok
}

// reduction is the job's reduction of milestone kind (Started or Exited).
func (j *jobState) reduction(kind int) *reduction {
	if kind == Started {
		return j.started
	}
	return j.exited
}

// eachReduction calls f on every reduction that waits for children: the
// DVM's milestones and each job's.
func (m *Machine) eachReduction(f func(*reduction)) {
	f(m.milestones[Spawned])
	f(m.milestones[Addressed])
	for _, j := range m.sortedJobs() {
		f(j.started)
		f(j.exited)
		f(j.left)
	}
}

func (m *Machine) moveLaunch(j *jobState, to launchState) bool {
	what := "the launch"
	if j.num != 0 {
		what = fmt.Sprintf("the launch of job %d", j.num)
	}
	return move(m, what, launchMoves, &j.launch, to)
}

// jobSet is a set of job numbers that are handed out from 1 in order and
// each joins once: every number up to floor, and those above it.
type jobSet struct {
	floor int
	above map[int]bool
}

func (s *jobSet) has(n int) bool { return n <= s.floor || s.above[n] }

func (s *jobSet) add(n int) {
	if s.has(n) {
		return
	}
	if s.above == nil {
		s.above = map[int]bool{}
	}
	s.above[n] = true
	for s.above[s.floor+1] {
		delete(s.above, s.floor+1)
		s.floor++
	}
}
