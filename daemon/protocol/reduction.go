package protocol

import "slices"

// reduction is one reduce-up over the spawn tree that carries no data:
// it is ready once this daemon's own part is in and every participating
// child's has come. The milestones and the signal acknowledgements are
// each one; the PMI collectives, which carry data, are modex/collective's
// machine, under the same rule.
//
// The rule for a child that fails midway: it is dropped and never waited
// for. Its failure travels up on its own (the job aborts), or, with
// --on-unreachable skip, its children are adopted and join in its place.
type reduction struct {
	local   bool
	waiting map[int]bool // children whose part has not come
	done    bool
	fixed   bool // who takes part was fixed (only): no child joins
}

func newReduction(children []int) *reduction {
	r := &reduction{waiting: make(map[int]bool, len(children))}
	for _, c := range children {
		r.waiting[c] = true
	}
	return r
}

// join adds a child that must take part (an adopted grandchild).
func (r *reduction) join(child int) {
	if !r.done && !r.fixed {
		r.waiting[child] = true
	}
}

// only narrows the children waited for to those listed: the others
// take no part (a sparse job's children that hold none of its ranks).
func (r *reduction) only(children []int) {
	for c := range r.waiting {
		if !slices.Contains(children, c) {
			delete(r.waiting, c)
		}
	}
	r.fixed = true
}

// drop stops waiting for a child that failed.
func (r *reduction) drop(child int) { delete(r.waiting, child) }

// add records a child's part.
func (r *reduction) add(child int) { delete(r.waiting, child) }

// takes says whether child's part is still expected.
func (r *reduction) takes(child int) bool { return r.waiting[child] }

// ready reports, once, that every part is in: the caller passes the
// result up (or, at mpirun, acts on it).
func (r *reduction) ready() bool {
	if r.done || !r.local || len(r.waiting) > 0 {
		return false
	}
	r.done = true
	return true
}
