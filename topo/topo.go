// Package topo holds the trees every daemon computes identically: pure
// functions of (size, degree, id) over daemon ids 0..size-1, where 0 is
// mpirun. The spawn tree and the routing topologies are built from them, so
// a parent and its child can never disagree about who is whose child.
package topo

// Tree is a rooted tree over the ids 0..Size()-1 with root 0.
type Tree interface {
	// Size is the number of vertices, mpirun included.
	Size() int
	// Parent of id, or -1 for the root.
	Parent(id int) int
	// Children of id in ascending order; nil for a leaf.
	Children(id int) []int
}

// Radix returns the complete degree-ary tree in heap layout: the children
// of p are p·degree+1 … p·degree+degree. A degree of size-1 or more is a star.
func Radix(size, degree int) Tree {
	if degree < 1 {
		degree = 1
	}
	return radix{size: size, degree: degree}
}

type radix struct{ size, degree int }

func (r radix) Size() int { return r.size }

func (r radix) Parent(id int) int {
	if id <= 0 {
		return -1
	}
	return (id - 1) / r.degree
}

func (r radix) Children(id int) []int {
	first := id*r.degree + 1
	if id > (r.size-1)/r.degree || first >= r.size { // also guards overflow
		return nil
	}
	last := min(first+r.degree, r.size)
	kids := make([]int, 0, last-first)
	for c := first; c < last; c++ {
		kids = append(kids, c)
	}
	return kids
}

// Binomial returns the binomial tree: the parent of id is id with its
// highest set bit cleared, so the root has ⌈log2 size⌉ children and the
// depth of id is its number of set bits: the tree's depth is ⌊log2 size⌋,
// which is ⌈log2 size⌉ only when size is a power of two.
func Binomial(size int) Tree { return binomial{size: size} }

type binomial struct{ size int }

func (b binomial) Size() int { return b.size }

func (b binomial) Parent(id int) int {
	if id <= 0 {
		return -1
	}
	high := 1
	for high<<1 <= id {
		high <<= 1
	}
	return id &^ high
}

func (b binomial) Children(id int) []int {
	var kids []int
	bit := 1
	for bit <= id {
		bit <<= 1
	}
	for ; id+bit < b.size; bit <<= 1 {
		kids = append(kids, id+bit)
	}
	return kids
}

// Star returns the tree in which the root is the parent of every other id:
// the flat launch of the paper's "vanilla rsh" baseline.
func Star(size int) Tree { return Radix(size, max(size-1, 1)) }

// Subtree returns the descendants of id in preorder, id itself excluded.
func Subtree(t Tree, id int) []int {
	var out []int
	stack := reverse(t.Children(id))
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, top)
		stack = append(stack, reverse(t.Children(top))...)
	}
	return out
}

// Depth is the number of edges on the longest root-to-leaf path.
func Depth(t Tree) int {
	deepest := 0
	for id := 1; id < t.Size(); id++ {
		d := 0
		for p := id; p > 0; p = t.Parent(p) {
			d++
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// Toward returns the neighbour of self on the path to dst: the child whose
// subtree holds dst, or self's parent when dst is not below self. It
// returns self when dst == self.
func Toward(t Tree, self, dst int) int {
	if dst == self {
		return self
	}
	for p := dst; p >= 0; p = t.Parent(p) {
		if t.Parent(p) == self {
			return p
		}
	}
	return t.Parent(self)
}

func reverse(ids []int) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

// SubtreeSize is the number of vertices in id's subtree, id included. A
// radix tree counts it level by level, in O(depth); others walk it.
func SubtreeSize(t Tree, id int) int {
	switch t := t.(type) {
	case radix:
		return t.subtreeSize(id)
	case grown:
		return t.subtreeSize(id)
	}
	return 1 + len(Subtree(t, id))
}

// subtreeSize counts id's descendants a level at a time: in heap layout
// each level below id is one contiguous run of ids.
func (r radix) subtreeSize(id int) int {
	if id < 0 || id >= r.size {
		return 0
	}
	n := 0
	for first, last := id, id; first < r.size; {
		n += min(last, r.size-1) - first + 1
		if first > (r.size-1)/r.degree { // the next level is past the end (and guards overflow)
			break
		}
		first, last = first*r.degree+1, min(last, r.size-1)*r.degree+r.degree
	}
	return n
}

// Grown returns t with the ids t.Size() … size-1 added as leaves under
// the root: the daemons a job adds once it runs (a child job's new
// hosts), which mpirun starts itself. Any id past t's is under the root,
// even past size: a daemon that knows fewer of them places them right.
func Grown(t Tree, size int) Tree {
	if g, ok := t.(grown); ok {
		t = g.base
	}
	return grown{base: t, size: max(size, t.Size())}
}

type grown struct {
	base Tree
	size int
}

func (g grown) Size() int { return g.size }

func (g grown) Parent(id int) int {
	if id >= g.base.Size() {
		return 0
	}
	return g.base.Parent(id)
}

func (g grown) Children(id int) []int {
	if id >= g.base.Size() {
		return nil
	}
	kids := g.base.Children(id)
	if id != 0 || g.size == g.base.Size() {
		return kids
	}
	out := make([]int, 0, len(kids)+g.size-g.base.Size())
	out = append(out, kids...)
	for late := g.base.Size(); late < g.size; late++ {
		out = append(out, late)
	}
	return out
}

func (g grown) subtreeSize(id int) int {
	switch {
	case id == 0:
		return g.size
	case id >= g.size || id < 0:
		return 0
	case id >= g.base.Size():
		return 1
	}
	return SubtreeSize(g.base, id)
}
