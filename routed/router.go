package routed

import "slices"

// Router holds messages for neighbours whose address is not known yet and
// releases them, in order, once phase 2 delivers the address: never an
// error, never a poll. M is the driver's message type.
type Router[M any] struct {
	self    int
	topo    Topology
	known   func(id int) bool
	pending map[int][]M
	held    int // messages in pending
}

// Delivery asks the driver to send Msg to the neighbour Via.
type Delivery[M any] struct {
	Via int
	Msg M
}

// NewRouter returns the router of daemon self. known reports whether a
// daemon's address is known (phase 2's Lookup, or a live connection).
func NewRouter[M any](self int, t Topology, known func(id int) bool) *Router[M] {
	return &Router[M]{self: self, topo: t, known: known, pending: map[int][]M{}}
}

// Route sends msg toward dst: to the next hop at once if its address is
// known, else later, from Learned.
func (r *Router[M]) Route(dst int, msg M) []Delivery[M] {
	return r.to(r.topo.NextHop(r.self, dst), msg)
}

// Reroute routes what comes next along t: the same daemons and more
// (a job that added some, see Grow).
func (r *Router[M]) Reroute(t Topology) { r.topo = t }

// Neighbour sends msg to daemon via itself, with the same deferral.
func (r *Router[M]) Neighbour(via int, msg M) []Delivery[M] { return r.to(via, msg) }

func (r *Router[M]) to(via int, msg M) []Delivery[M] {
	if len(r.pending[via]) == 0 && r.known(via) {
		return []Delivery[M]{{via, msg}}
	}
	r.pending[via] = append(r.pending[via], msg)
	r.held++
	return nil
}

// Learned releases what was held for the daemons whose addresses just
// became known.
func (r *Router[M]) Learned(ids ...int) []Delivery[M] {
	var out []Delivery[M]
	for _, id := range ids {
		if !r.known(id) {
			continue
		}
		for _, m := range r.pending[id] {
			out = append(out, Delivery[M]{id, m})
		}
		r.held -= len(r.pending[id])
		delete(r.pending, id)
	}
	return out
}

// Waiting lists, in ascending order, the daemons messages are held for.
func (r *Router[M]) Waiting() []int {
	ids := make([]int, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Held is the number of messages waiting for an address.
func (r *Router[M]) Held() int { return r.held }
