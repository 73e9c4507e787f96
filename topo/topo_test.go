package topo_test

import (
	"flag"
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"prsh/internal/purity"
	"prsh/topo"
)

// maxSize is the largest tree checked: n ≤ 2000 daemons plus mpirun.
const maxSize = 2001

// maxDegree is the largest Radix degree checked.
const maxDegree = 64

var fullGrid = flag.Bool("topo.fullgrid", false,
	"check Radix at every size 1..2001 for every degree 1..64 (over a minute of CPU under -race)")

// gridDegrees are the Radix degrees checked at every size 1..maxSize; every
// other degree up to 64 is checked at spotSizes.
//
// The full grid (every degree at every size, -topo.fullgrid) is 64 × 2001
// trees, two million vertices per degree. Measured on the 2-core machine
// this was written on, a degree costs 1 to 2 s of CPU under -race, more
// than half of it in topo's own Parent, Children and Subtree (their
// allocations): the full grid is over a minute, and the fallback of every
// size for 1..8, 16, 32 and 64 still 15 to 20 s. So every size is checked
// for the path, the binary and ternary trees and the default radix 64,
// plus Binomial and Star; each other degree is checked at spotSizes: every
// size up to 130 (a degree's first levels, the star and near-star shapes,
// every remainder of a last partial family) and the sizes around each of
// its level boundaries up to 2001.
var gridDegrees = []int{1, 2, 3, 64}

// spotSizes are the sizes at which every degree is checked.
func spotSizes(degree int) []int {
	var sizes []int
	for s := 1; s <= 130; s++ {
		sizes = append(sizes, s)
	}
	// Complete trees and one vertex more or less, for every height.
	if degree > 1 {
		for total, pow := 1, 1; total <= maxSize; {
			pow *= degree
			total += pow
			for _, s := range []int{total - 1, total, total + 1} {
				if s > 130 && s <= maxSize {
					sizes = append(sizes, s)
				}
			}
		}
	}
	sizes = append(sizes, 255, 256, 257, 500, 999, 1000, 1001, 1024, 1500, maxSize-1, maxSize)
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// radixHeight is the minimal height of a tree with size vertices in which
// every vertex has at most degree children: the least h with
// 1 + δ + … + δ^h ≥ size (size-1 for δ = 1).
func radixHeight(size, degree int) int {
	h := 0
	for total, pow := 1, 1; total < size; h++ {
		pow *= degree
		total += pow
	}
	return h
}

// binomialHeight is the depth of the binomial tree: the depth of an id is
// its number of set bits, and the largest bit count below size is ⌊log2
// size⌋ (reached by 2^⌊log2 size⌋ - 1). It is at most ⌈log2 size⌉, the
// bound the tree is known for, and equal to it when size is a power of two.
func binomialHeight(size int) int { return bits.Len(uint(size)) - 1 }

// family is a kind of tree, checked at many sizes.
type family struct {
	format  string // label with a %d for the size
	tree    func(size int) topo.Tree
	parent  func(id int) int // the documented parent of id ≥ 1, whatever the size
	maxKids func(size int) int
	height  func(size int) int // exact depth
}

func radixFamily(degree int) family {
	return family{
		format:  fmt.Sprintf("Radix(size=%%d, degree=%d)", degree),
		tree:    func(size int) topo.Tree { return topo.Radix(size, degree) },
		parent:  func(id int) int { return (id - 1) / degree }, // heap layout
		maxKids: func(int) int { return degree },
		height:  func(size int) int { return radixHeight(size, degree) },
	}
}

var binomialFamily = family{
	format:  "Binomial(size=%d)",
	tree:    topo.Binomial,
	parent:  func(id int) int { return id &^ (1 << (bits.Len(uint(id)) - 1)) }, // highest bit cleared
	maxKids: func(size int) int { return bits.Len(uint(size - 1)) },            // ⌈log2 size⌉
	height:  binomialHeight,
}

var starFamily = family{
	format:  "Star(size=%d)",
	tree:    topo.Star,
	parent:  func(int) int { return 0 },
	maxKids: func(size int) int { return size - 1 },
	height:  func(size int) int { return min(size-1, 1) },
}

// checker checks the trees of one family at any size. Every family here is
// nested: Parent(id) does not depend on the size (heap layout, highest bit
// cleared, root), and every parent is below its child, so the tree of size
// s is the tree of size maxSize cut down to the ids below s. checker draws
// the expected tree once, at maxSize, from the documented parent function
// alone; check(s) pins Parent to it, so the expected Children lists,
// preorder, depths and ancestors at size s are the maxSize ones restricted
// to ids below s.
//
// That keeps the work per vertex and size small: the grid is tens of
// millions of (size, id) pairs, and under -race each memory access is a
// call into the race runtime.
type checker struct {
	t   *testing.T
	fam family

	// The expected tree at maxSize.
	ref   []int // ref[id] = fam.parent(id); -1 for 0
	pre   []int // preorder from 0, children ascending, 0 included
	pos   []int // index of each id in pre
	sz    []int // subtree sizes, the vertex included
	depth []int
	tall  []int // tall[s] = the height of the tree cut to ids below s

	size   int // the size checked last
	height int // its height, tall[size]
	label  string
	root   int // len(Children(0)) at that size
}

func newChecker(t *testing.T, fam family) *checker {
	c := &checker{t: t, fam: fam,
		ref: make([]int, maxSize), pos: make([]int, maxSize), sz: make([]int, maxSize),
		depth: make([]int, maxSize), tall: make([]int, maxSize+1)}
	c.ref[0] = -1
	kids := make([][]int, maxSize)
	for id := 1; id < maxSize; id++ {
		p := fam.parent(id)
		if p < 0 || p >= id {
			t.Fatalf("%s: the documented parent of %d is %d, not an id below it", fmt.Sprintf(fam.format, maxSize), id, p)
		}
		c.ref[id] = p
		kids[p] = append(kids[p], id) // ascending
		c.depth[id] = c.depth[p] + 1
		c.tall[id+1] = max(c.tall[id], c.depth[id])
	}
	for stack := []int{0}; len(stack) > 0; {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c.pos[v] = len(c.pre)
		c.pre = append(c.pre, v)
		for i := len(kids[v]) - 1; i >= 0; i-- {
			stack = append(stack, kids[v][i])
		}
	}
	for i := maxSize - 1; i > 0; i-- {
		v := c.pre[i]
		c.sz[v]++
		c.sz[c.ref[v]] += c.sz[v]
	}
	c.sz[0]++
	return c
}

func (c *checker) fail(format string, args ...any) bool {
	c.t.Helper()
	c.t.Errorf("%s: %s", c.label, fmt.Sprintf(format, args...))
	return false
}

// check runs every check on fam.tree(size). It reports the first failure
// and returns false.
func (c *checker) check(size int) bool {
	c.t.Helper()
	c.size, c.height, c.label = size, c.tall[size], fmt.Sprintf(c.fam.format, size)
	if want := c.fam.height(size); c.height != want {
		return c.fail("the documented tree has height %d, want %d", c.height, want)
	}
	tr := c.fam.tree(size)
	return c.structure(tr) && c.subtree(tr) && c.depthFunc(tr) && c.toward(tr)
}

// structure checks that Size is right, Parent is the documented one,
// Parent and Children agree (c ∈ Children(p) ⇔ Parent(c) = p), children
// ascend and are at most maxKids, and that Subtree(0) is the preorder
// (children ascending), hence every id 1..size-1 is reached from 0 exactly
// once.
func (c *checker) structure(tr topo.Tree) bool {
	c.t.Helper()
	size, ref := c.size, c.ref // locals: a field load is a race-runtime call
	if got := tr.Size(); got != size {
		return c.fail("Size() = %d, want %d", got, size)
	}
	if p := tr.Parent(0); p != -1 {
		return c.fail("Parent(0) = %d, want -1", p)
	}
	for id := 1; id < size; id++ {
		if p := tr.Parent(id); p != ref[id] {
			return c.fail("Parent(%d) = %d, want %d", id, p, ref[id])
		}
	}
	maxKids, listed := c.fam.maxKids(size), 0
	for p := range size {
		kids := tr.Children(p)
		if len(kids) > maxKids {
			return c.fail("Children(%d) has %d ids, want at most %d", p, len(kids), maxKids)
		}
		for i, k := range kids {
			if k <= 0 || k >= size || ref[k] != p {
				return c.fail("%d ∈ Children(%d) = %v, but it is not an id in 1..%d whose Parent is %d", k, p, clip(kids), size-1, p)
			}
			if i > 0 && kids[i-1] >= k {
				return c.fail("Children(%d) = %v, want strictly ascending", p, clip(kids))
			}
		}
		listed += len(kids)
		if p == 0 {
			c.root = len(kids)
		}
	}
	// Each id k can only be listed in Children(Parent(k)), once: the lists
	// hold size-1 ids in all iff every id 1..size-1 is in its parent's.
	if listed != size-1 {
		for k := 1; k < size; k++ {
			if p := ref[k]; !slices.Contains(tr.Children(p), k) {
				return c.fail("Parent(%d) = %d but %d ∉ Children(%d) = %v", k, p, k, p, clip(tr.Children(p)))
			}
		}
	}
	got := topo.Subtree(tr, 0)
	if !c.preorder(got, 0) {
		return c.fail("Subtree(0) = %v, want the preorder %v", clip(got), clip(c.want(0)))
	}
	return true
}

// preorder reports whether got is the preorder of v's subtree at the
// current size, v excluded: the maxSize one with the ids ≥ size left out.
func (c *checker) preorder(got []int, v int) bool {
	size, pre := c.size, c.pre
	j := 0
	for _, id := range pre[c.pos[v]+1 : c.pos[v]+c.sz[v]] {
		if id < size {
			if j == len(got) || got[j] != id {
				return false
			}
			j++
		}
	}
	return j == len(got)
}

// want is the preorder of v's subtree at the current size, for messages.
func (c *checker) want(v int) []int {
	var ids []int
	for _, id := range c.pre[c.pos[v]+1 : c.pos[v]+c.sz[v]] {
		if id < c.size {
			ids = append(ids, id)
		}
	}
	return ids
}

// subtree checks Subtree(v) for the parent of the last id, deep in the
// tree: its subtree is small.
func (c *checker) subtree(tr topo.Tree) bool {
	if c.size < 2 {
		return true
	}
	v := c.ref[c.size-1]
	if got := topo.Subtree(tr, v); !c.preorder(got, v) {
		return c.fail("Subtree(%d) = %v, want the preorder %v", v, clip(got), clip(c.want(v)))
	}
	return true
}

// depthFunc checks topo.Depth, which costs Σ depth(id), up to size·height.
// It is checked where it is cheap, at the sizes where the height changes
// (the first vertex of a new level and the one before) and at a few spot
// sizes; the height itself is checked at every size by check.
func (c *checker) depthFunc(tr topo.Tree) bool {
	size, tall := c.size, c.tall
	cheap := size*(c.height+1) <= 1<<12
	boundary := tall[size-1] != tall[size] || (size < maxSize && tall[size+1] != tall[size])
	spot := c.spot() && (size*(c.height+1) <= 1<<16 || size == 1000 || size == maxSize)
	if !cheap && !(boundary && size*(c.height+1) <= 1<<14) && !spot {
		return true
	}
	if got := topo.Depth(tr); got != c.height {
		return c.fail("Depth = %d, want %d", got, c.height)
	}
	return true
}

// spot tells the sizes at which the checks costing O(size·height) or
// O(height²) run whatever the cost: they add up only on the path (δ = 1).
func (c *checker) spot() bool {
	return c.size%97 == 0 || c.size == 1000 || c.size == maxSize
}

// below reports whether w is in the subtree of v (v included): the same
// at every size, ancestors being below their descendants.
func (c *checker) below(v, w int) bool { return c.pos[v] <= c.pos[w] && c.pos[w] < c.pos[v]+c.sz[v] }

// dist is the number of edges between a and b.
func (c *checker) dist(a, b int) int {
	d := 0
	for a != b {
		if c.depth[a] < c.depth[b] {
			a, b = b, a
		}
		a = c.ref[a]
		d++
	}
	return d
}

// towardStep checks Toward(a, b): it must be the only neighbour of a on the
// path to b, the child whose subtree holds b or else the parent.
func (c *checker) towardStep(tr topo.Tree, a, b int) (int, bool) {
	got := topo.Toward(tr, a, b)
	var ok bool
	switch {
	case a == b:
		ok = got == a
	case c.below(a, b):
		ok = got > 0 && got < c.size && c.ref[got] == a && c.below(got, b)
	default:
		ok = got == c.ref[a]
	}
	if !ok {
		return got, c.fail("Toward(%d, %d) = %d, not the next vertex on the path", a, b, got)
	}
	return got, true
}

// toward checks Toward on every pair of a sample of ids, and follows it
// from a to b on a few pairs: the number of hops must be the distance, at
// most 2·Depth. A small tree gets every pair and every walk; a large one a
// spread sized so that the case costs a few hundred steps of Toward, which
// walks up from b (up to height steps a call). Trees taller than 64 (the
// path, δ = 1, beyond 65 vertices) are checked at every 8th size only.
func (c *checker) toward(tr topo.Tree) bool {
	size := c.size
	if c.height > 64 && size%8 != 0 && !c.spot() {
		return true // a long path: every 8th size
	}
	var sample []int
	var walks [][2]int
	if size <= 12 {
		for a := range size {
			sample = append(sample, a)
			for b := range size {
				walks = append(walks, [2]int{a, b})
			}
		}
	} else {
		const budget = 1 << 8
		m := 2
		for (m+1)*(m+1)*(c.height+1) <= budget {
			m++
		}
		leaf := c.deepest() // a deepest vertex, a leaf
		sample = append(sample, 0, leaf)
		for i := 0; len(sample) < m; i++ {
			sample = append(sample, size-1-i*(size-1)/(m-2))
		}
		walks = [][2]int{{size - 1, 0}} // up: cheap, Toward to an ancestor stops at the root
		if 2*(c.height+1)*(c.height+1) <= budget {
			walks = append(walks, [2]int{leaf, size / 2}, [2]int{size / 2, leaf})
		}
	}
	for _, a := range sample {
		for _, b := range sample {
			if _, ok := c.towardStep(tr, a, b); !ok {
				return false
			}
		}
	}
	for _, w := range walks {
		a, b := w[0], w[1]
		hops := 0
		for x := a; x != b; hops++ {
			if hops > 2*c.height {
				return c.fail("following Toward from %d to %d takes more than 2·Depth = %d hops", a, b, 2*c.height)
			}
			next, ok := c.towardStep(tr, x, b)
			if !ok {
				return false
			}
			x = next
		}
		if d := c.dist(a, b); hops != d {
			return c.fail("following Toward from %d to %d takes %d hops, want the distance %d", a, b, hops, d)
		}
	}
	return true
}

// deepest is the first id at the largest depth of the current size.
func (c *checker) deepest() int {
	for id := c.size - 1; ; id-- {
		if c.tall[id] < c.height {
			return id
		}
	}
}

func clip(ids []int) []int {
	if len(ids) > 20 {
		return ids[:20]
	}
	return ids
}

func TestRadixEverySize(t *testing.T) {
	degrees := gridDegrees
	if *fullGrid {
		degrees = nil
		for d := 1; d <= maxDegree; d++ {
			degrees = append(degrees, d)
		}
	}
	for _, degree := range degrees {
		t.Run(fmt.Sprintf("degree=%d", degree), func(t *testing.T) {
			t.Parallel()
			c := newChecker(t, radixFamily(degree))
			for size := 1; size <= maxSize && c.check(size); size++ {
			}
		})
	}
}

func TestRadixEveryDegree(t *testing.T) {
	for degree := 1; degree <= maxDegree; degree++ {
		if slices.Contains(gridDegrees, degree) && !*fullGrid {
			continue // every size is checked by TestRadixEverySize
		}
		t.Run(fmt.Sprintf("degree=%d", degree), func(t *testing.T) {
			t.Parallel()
			c := newChecker(t, radixFamily(degree))
			for _, size := range spotSizes(degree) {
				if !c.check(size) {
					return
				}
			}
		})
	}
}

// TestRadixDegreeBelowOne: a degree below 1 is taken as 1 (a path).
func TestRadixDegreeBelowOne(t *testing.T) {
	for _, degree := range []int{0, -1, -64} {
		for _, size := range []int{1, 2, 3, 10, 100} {
			got, path := topo.Radix(size, degree), topo.Radix(size, 1)
			for id := range size {
				if got.Parent(id) != path.Parent(id) || !slices.Equal(got.Children(id), path.Children(id)) {
					t.Errorf("Radix(size=%d, degree=%d) differs from Radix(size=%d, degree=1) at %d", size, degree, size, id)
					break
				}
			}
		}
	}
}

func TestBinomialEverySize(t *testing.T) {
	t.Parallel()
	c := newChecker(t, binomialFamily)
	for size := 1; size <= maxSize && c.check(size); size++ {
		// The root has ⌈log2 size⌉ children, the depth is at most that.
		if ceil := bits.Len(uint(size - 1)); c.root != ceil || c.height > ceil {
			t.Fatalf("%s: the root has %d children and the depth is %d, want ⌈log2 size⌉ = %d and at most that",
				c.label, c.root, c.height, ceil)
		}
	}
}

func TestStarEverySize(t *testing.T) {
	t.Parallel()
	c := newChecker(t, starFamily)
	for size := 1; size <= maxSize && c.check(size); size++ {
	}
}

// TestHeights pins the closed forms the property tests rely on.
func TestHeights(t *testing.T) {
	radix := []struct{ size, degree, want int }{
		{1, 1, 0}, {2, 1, 1}, {5, 1, 4},
		{1, 2, 0}, {2, 2, 1}, {3, 2, 1}, {4, 2, 2}, {7, 2, 2}, {8, 2, 3},
		{4, 3, 1}, {5, 3, 2}, {13, 3, 2}, {14, 3, 3},
		{65, 64, 1}, {66, 64, 2}, {2001, 64, 2}, {2001, 2, 10}, {2001, 1, 2000},
	}
	for _, tt := range radix {
		if got := radixHeight(tt.size, tt.degree); got != tt.want {
			t.Errorf("radixHeight(%d, %d) = %d, want %d", tt.size, tt.degree, got, tt.want)
		}
	}
	binomial := []struct{ size, want int }{
		{1, 0}, {2, 1}, {3, 1}, {4, 2}, {5, 2}, {7, 2}, {8, 3}, {9, 3}, {2001, 10}, {2048, 11},
	}
	for _, tt := range binomial {
		if got := binomialHeight(tt.size); got != tt.want {
			t.Errorf("binomialHeight(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestPure(t *testing.T) { purity.Check(t, "prsh/topo") }
