// Package collective is the ranks' collectives over the daemon tree as
// one pure state machine (in the manner of spawn.Phase1: events in,
// actions out, no I/O): the PMI fence, allgather and PMIX_Ring. Each
// daemon merges its local ranks' parts and its children's into one part
// that goes up; the root computes the result, which comes back down, each
// daemon passing it to its children and handing it to its local ranks.
//
// The operations differ only in what the root makes of the merged parts
// and in what goes down to each child (everything, or only the share of
// the ranks below it); the reduction, the rule for a failed child and the
// parts that come before the launch are written once, in Machine.
//
// Which ranks and children take part is a parameter (Members, given per
// group), so that a collective over part of the job, or over several
// jobs, is one more group rather than another machine.
package collective

import (
	"fmt"
	"slices"

	"prsh/modex"
)

// Op is what a collective computes.
type Op int

const (
	// Fence: every put of every rank, committed job-wide (PMI fence).
	Fence Op = iota + 1
	// Allgather: every rank's value, in rank order (seed 001's extension).
	Allgather
	// Ring: each rank's position and its neighbours' values (PMIX_Ring).
	Ring
	numOps
)

var opNames = [numOps]string{Fence: "fence", Allgather: "allgather", Ring: "ring"}

func (o Op) String() string {
	if o.valid() {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", int(o))
}

func (o Op) valid() bool { return o >= Fence && o < numOps }

// ID names one collective.
type ID struct {
	// Group is the set of ranks taking part: "" is every rank of the job.
	// A PMIx group, or the parents and children of an MPI_Comm_spawn,
	// would be a group of its own, with its own Members.
	Group string `json:",omitzero"`
	Op    Op
	// Seq counts the group's collectives of Op from 1: a rank's n-th
	// fence is fence n.
	Seq int
}

func (id ID) String() string {
	if id.Group == "" {
		return fmt.Sprintf("%v %d", id.Op, id.Seq)
	}
	return fmt.Sprintf("%v %d of %s", id.Op, id.Seq, id.Group)
}

// Part is what a collective carries: going up, the entries of a
// subtree's ranks; going down, the result (or a child's share of it).
// Each operation uses its own fields.
type Part struct {
	// Fence: the puts since the previous fence, up; everything the fence
	// committed, down.
	KVs []modex.KV `json:",omitzero"`
	// Allgather, up: each rank's value.
	Values []RankValue `json:",omitzero"`
	// Allgather, down: every rank's value, in rank order.
	Ordered []string `json:",omitzero"`
	// Ring: the ranks' inputs, up; the answers of the ranks below, down.
	Ring []RingEntry `json:",omitzero"`
	// Gone: the ranks of a group that left (exited or finalised) before
	// entering this collective. Any at all fails it, for every member:
	// its result lacks their parts.
	Gone []int `json:",omitzero"`
}

// RankValue is one rank's value in an allgather.
type RankValue struct {
	Rank  int
	Value string
}

// RingEntry is one rank's part of a ring: given (Count, Left, Right) on
// the way up; on the way down Count is its position (the sum of the
// counts before it), Left the Right of the rank before it and Right the
// Left of the rank after it, wrapping round.
type RingEntry struct {
	Rank  int
	Count int
	Left  string
	Right string
}

// merge is the reduction of every operation: each part lists entries of
// its own ranks, so two subtrees' parts are the two lists together.
func (p *Part) merge(q Part) {
	p.KVs = append(p.KVs, q.KVs...)
	p.Values = append(p.Values, q.Values...)
	p.Ring = append(p.Ring, q.Ring...)
	p.Gone = append(p.Gone, q.Gone...)
}

// operation is what sets one Op apart from the others.
type operation struct {
	// result turns, at the root, every rank's entries into what goes down.
	result func(Part) Part
	// scatters: each child gets only the share of the ranks below it,
	// each daemon's ranks only their own answers; otherwise every
	// daemon gets the whole result.
	scatters bool
}

var operations = [numOps]operation{
	Fence:     {result: func(p Part) Part { return p }},
	Allgather: {result: inRankOrder},
	// Each entry and each answer crosses each level of the tree once:
	// O(p · depth) bytes, where an allgather brings every entry to every
	// daemon.
	Ring: {result: answerRing, scatters: true},
}

func inRankOrder(p Part) Part {
	sorted := slices.Clone(p.Values)
	slices.SortFunc(sorted, func(a, b RankValue) int { return a.Rank - b.Rank })
	values := make([]string, len(sorted))
	for i, e := range sorted {
		values[i] = e.Value
	}
	return Part{Ordered: values}
}

// answerRing computes every rank's answer from every rank's entry.
func answerRing(p Part) Part {
	in := slices.Clone(p.Ring)
	slices.SortFunc(in, func(a, b RingEntry) int { return a.Rank - b.Rank })
	out := make([]RingEntry, len(in))
	sum := 0
	for i, e := range in {
		prev, next := in[(i+len(in)-1)%len(in)], in[(i+1)%len(in)]
		out[i] = RingEntry{Rank: e.Rank, Count: sum, Left: prev.Right, Right: next.Left}
		sum += e.Count
	}
	return Part{Ring: out}
}

// split shares out a scattering result: where says, for each rank, Here,
// the child below which it lives, or Nowhere (such entries are dropped).
// Every share carries the whole Gone: a ring that ranks left fails for
// every rank in it.
func (p Part) split(where func(rank int) int) map[int]Part {
	shares := map[int]Part{}
	for _, e := range p.Ring {
		at := where(e.Rank)
		s := shares[at]
		s.Ring = append(s.Ring, e)
		s.Gone = p.Gone
		shares[at] = s
	}
	delete(shares, Nowhere)
	return shares
}
