// Package routed is how messages find their way between daemons: phase 2
// (the paper's Algorithm 2, a flooding all-gather of contact addresses over
// the spawn tree), the routing topologies chosen with --routed, and a
// router that holds a message for a daemon whose address is not known yet
// until phase 2 delivers it. Everything here is pure: no sockets, no
// goroutines, no clocks.
package routed

import (
	"fmt"
	"slices"
	"strings"

	"prsh/topo"
)

// DefaultRadix is the radix of the routing tree when the spawn degree does
// not give one (Open MPI's routed_radix default).
const DefaultRadix = 64

// Topology decides which daemon a message goes through next.
type Topology interface {
	// Name is the --routed name.
	Name() string
	// NextHop is the daemon self hands a message for dst to.
	NextHop(self, dst int) int
	// Fanout lists the daemons self forwards a broadcast from mpirun to.
	Fanout(self int) []int
	// Tree is the topology's spanning tree, the spawn tree when δ = 0.
	Tree() topo.Tree
}

// Names lists the topologies New accepts.
var Names = []string{"radix", "binomial", "direct"}

// New returns the topology called name over size daemons (mpirun included).
// radix is the radix of the "radix" tree.
func New(name string, size, radix int) (Topology, error) {
	switch name {
	case "radix":
		return treeRouting{name, topo.Radix(size, radix)}, nil
	case "binomial":
		return treeRouting{name, topo.Binomial(size)}, nil
	case "direct":
		return direct{topo.Star(size)}, nil
	}
	return nil, fmt.Errorf("unknown routing topology %q (choose one of %s)", name, strings.Join(Names, ", "))
}

// treeRouting routes along a tree: up to the common ancestor, then down.
type treeRouting struct {
	name string
	tree topo.Tree
}

func (t treeRouting) Name() string              { return t.name }
func (t treeRouting) Tree() topo.Tree           { return t.tree }
func (t treeRouting) Fanout(self int) []int     { return t.tree.Children(self) }
func (t treeRouting) NextHop(self, dst int) int { return topo.Toward(t.tree, self, dst) }

// direct sends every message straight to its destination; mpirun sends a
// broadcast to every daemon itself.
type direct struct{ star topo.Tree }

func (direct) Name() string              { return "direct" }
func (d direct) Tree() topo.Tree         { return d.star }
func (direct) NextHop(self, dst int) int { return dst }

func (d direct) Fanout(self int) []int {
	if self != 0 {
		return nil
	}
	return d.star.Children(0)
}

// Grow returns t over size daemons, or more: those past t's own (the
// daemons a running job adds, see topo.Grown) are leaves under mpirun,
// which alone reaches them. A daemon that knows fewer still routes a
// message for one of them: toward mpirun.
func Grow(t Topology, size int) Topology {
	if g, ok := t.(grownRouting); ok {
		t = g.base
	}
	return grownRouting{base: t, tree: topo.Grown(t.Tree(), size)}
}

type grownRouting struct {
	base Topology
	tree topo.Tree
}

func (g grownRouting) Name() string    { return g.base.Name() }
func (g grownRouting) Tree() topo.Tree { return g.tree }

// planned is the number of daemons the job started with.
func (g grownRouting) planned() int { return g.base.Tree().Size() }

func (g grownRouting) NextHop(self, dst int) int {
	n := g.planned()
	switch {
	case self == dst:
		return self
	case self >= n:
		return 0
	case dst >= n && self == 0:
		return dst
	case dst >= n:
		return g.base.NextHop(self, 0)
	}
	return g.base.NextHop(self, dst)
}

func (g grownRouting) Fanout(self int) []int {
	if self >= g.planned() {
		return nil
	}
	out := g.base.Fanout(self)
	if self == 0 {
		for late := g.planned(); late < g.tree.Size(); late++ {
			out = append(slices.Clip(out), late)
		}
	}
	return out
}
