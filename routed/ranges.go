package routed

import "sort"

// Span is the daemon ids Lo, Lo+1, …, Hi-1.
type Span struct{ Lo, Hi int }

// Ranges is a set of daemon ids kept as sorted, disjoint, non-adjacent
// spans. Phase 2 moves whole subtrees, and in the heap layout of the radix
// tree a subtree is one span per level, so the sets a daemon holds stay a
// handful of spans where a map would hold one entry per daemon.
type Ranges struct {
	spans []Span
	n     int
}

// RangesOf returns the set of the given ids.
func RangesOf(ids ...int) Ranges {
	var r Ranges
	for _, id := range ids {
		r.Add(id, id+1)
	}
	return r
}

// Len is the number of ids in the set.
func (r Ranges) Len() int { return r.n }

// Spans are the set's spans in ascending order; the caller must not change
// them.
func (r Ranges) Spans() []Span { return r.spans }

// Contains says id is in the set.
func (r Ranges) Contains(id int) bool {
	i := r.after(id)
	return i > 0 && id < r.spans[i-1].Hi
}

// after is the index of the first span starting after id.
func (r Ranges) after(id int) int {
	return sort.Search(len(r.spans), func(i int) bool { return r.spans[i].Lo > id })
}

// Add puts the ids lo..hi-1 in the set.
func (r *Ranges) Add(lo, hi int) {
	if lo >= hi {
		return
	}
	// The spans that touch or overlap [lo, hi) are spans[i:j].
	i := sort.Search(len(r.spans), func(k int) bool { return r.spans[k].Hi >= lo })
	j := i
	for j < len(r.spans) && r.spans[j].Lo <= hi {
		lo, hi = min(lo, r.spans[j].Lo), max(hi, r.spans[j].Hi)
		r.n -= r.spans[j].Hi - r.spans[j].Lo
		j++
	}
	r.n += hi - lo
	if i == j {
		r.spans = append(r.spans, Span{})
		copy(r.spans[i+1:], r.spans[i:])
	} else {
		r.spans = append(r.spans[:i+1], r.spans[j:]...)
	}
	r.spans[i] = Span{lo, hi}
}

// AddAll puts every id of o in the set.
func (r *Ranges) AddAll(o Ranges) {
	for _, s := range o.spans {
		r.Add(s.Lo, s.Hi)
	}
}

// ContainsAll says every id of o is in the set.
func (r Ranges) ContainsAll(o Ranges) bool {
	for _, s := range o.spans {
		i := r.after(s.Lo)
		if i == 0 || r.spans[i-1].Hi < s.Hi {
			return false
		}
	}
	return true
}

// Intersects says some id is in both sets.
func (r Ranges) Intersects(o Ranges) bool {
	for _, s := range o.spans {
		i := r.after(s.Lo)
		if i > 0 && r.spans[i-1].Hi > s.Lo || i < len(r.spans) && r.spans[i].Lo < s.Hi {
			return true
		}
	}
	return false
}

// Minus is the ids of lo..hi-1 that are not in the set, in ascending order.
func (r Ranges) Minus(lo, hi int) []Span {
	var out []Span
	i := sort.Search(len(r.spans), func(k int) bool { return r.spans[k].Hi > lo })
	for ; lo < hi && i < len(r.spans) && r.spans[i].Lo < hi; i++ {
		if r.spans[i].Lo > lo {
			out = append(out, Span{lo, r.spans[i].Lo})
		}
		lo = max(lo, r.spans[i].Hi)
	}
	if lo < hi {
		out = append(out, Span{lo, hi})
	}
	return out
}

// Without is the set less every id of o.
func (r Ranges) Without(o Ranges) Ranges {
	var out Ranges
	for _, s := range r.spans {
		for _, rest := range o.Minus(s.Lo, s.Hi) {
			out.spans = append(out.spans, rest)
			out.n += rest.Hi - rest.Lo
		}
	}
	return out
}

// Within says every id of the set is in lo..hi-1.
func (r Ranges) Within(lo, hi int) bool {
	return r.n == 0 || r.spans[0].Lo >= lo && r.spans[len(r.spans)-1].Hi <= hi
}
