// Package spawn is phase 1 of the launch: the paper's Algorithm 1, spawning
// the daemons along a tree. Phase1 is a deterministic state machine with no
// I/O: events go in, actions come out, and a driver (the daemon, a test, a
// simulator) carries the actions out. The launch agents that really start a
// daemon on a node live in spawn/agent.
package spawn

import (
	"fmt"

	"prsh/topo"
)

// Node is a daemon to be: its id in the job (1..n, 0 is mpirun) and the
// host it runs on.
type Node struct {
	ID   int
	Host string
}

// Action is what the driver must do next: SpawnNode, SendSubtree or Complete.
type Action interface{ isAction() }

// SpawnNode asks the driver to start a daemon on Node through the launch
// agent, with this daemon's contact address as the parent.
type SpawnNode struct{ Node Node }

// SendSubtree asks the driver to hand a newly connected child the list of
// nodes below it, which the child will spawn in turn.
type SendSubtree struct {
	To    int
	Nodes []Node
}

// Complete says phase 1 is locally complete: every direct child connected
// (or, when adopting, connected or skipped).
type Complete struct{}

// Skip says a child could not be spawned and was left out; its children
// are adopted instead: the SpawnNode actions before it start them here.
type Skip struct{ Node Node }

func (SpawnNode) isAction()   {}
func (SendSubtree) isAction() {}
func (Complete) isAction()    {}
func (Skip) isAction()        {}

// Phase1 is Algorithm 1 at one daemon.
type Phase1 struct {
	self      int
	tree      topo.Tree
	hosts     map[int]string // id → host for self's descendants
	children  []int
	connected map[int]bool
	failed    map[int]bool
	adopted   map[int]bool // grandchildren taken over from a failed child
	adopt     bool
	started   bool
}

// NewPhase1 returns the machine of daemon self in the spawn tree.
func NewPhase1(self int, tree topo.Tree) *Phase1 {
	return &Phase1{self: self, tree: tree, connected: map[int]bool{}, failed: map[int]bool{}, adopted: map[int]bool{}}
}

// AdoptOrphans makes a failed child's children this daemon's own: they
// are spawned from here, so that one unreachable node does not cost its
// whole subtree (mpirun --on-unreachable skip). Without it a failed child
// only stops phase 1 from completing, and the job is aborted.
func (p *Phase1) AdoptOrphans() { p.adopt = true }

// Start begins phase 1 once the daemon knows its descendants: mpirun gets
// every node from the user, an orted gets its subtree from its parent. It
// checks that desc is exactly self's subtree in the tree, so that a parent
// and a child that disagree fail loudly instead of losing nodes.
func (p *Phase1) Start(desc []Node) ([]Action, error) {
	if p.started {
		return nil, fmt.Errorf("spawn: daemon %d started twice", p.self)
	}
	p.started = true
	p.hosts = make(map[int]string, len(desc))
	for _, n := range desc {
		p.hosts[n.ID] = n.Host
	}
	want := topo.Subtree(p.tree, p.self)
	if len(want) != len(desc) || !p.coversAll(want) {
		return nil, fmt.Errorf("spawn: daemon %d got %d nodes, its subtree has %d", p.self, len(desc), len(want))
	}
	p.children = p.tree.Children(p.self)
	var acts []Action
	for _, c := range p.children {
		acts = append(acts, SpawnNode{Node{ID: c, Host: p.hosts[c]}})
	}
	return append(acts, p.completion()...), nil
}

func (p *Phase1) coversAll(ids []int) bool {
	for _, id := range ids {
		if _, ok := p.hosts[id]; !ok {
			return false
		}
	}
	return true
}

// Connected handles a direct child that called back: it gets its subtree.
func (p *Phase1) Connected(child int) ([]Action, error) {
	if !p.isChild(child) {
		return nil, fmt.Errorf("spawn: daemon %d is not a child of daemon %d", child, p.self)
	}
	if p.connected[child] || p.failed[child] {
		return nil, fmt.Errorf("spawn: daemon %d connected twice", child)
	}
	p.connected[child] = true
	acts := []Action{SendSubtree{To: child, Nodes: p.Offsprings(child)}}
	return append(acts, p.completion()...), nil
}

// Failed records a direct child that could not be spawned or never called
// back. Without adoption its subtree is not launched; with it, the child
// is skipped and its own children are spawned from here.
func (p *Phase1) Failed(child int) []Action {
	if !p.isChild(child) || p.connected[child] || p.failed[child] {
		return nil
	}
	p.failed[child] = true
	if !p.adopt {
		return p.completion()
	}
	var acts []Action
	for _, g := range p.tree.Children(child) {
		p.adopted[g] = true
		p.children = append(p.children, g)
		acts = append(acts, SpawnNode{Node{ID: g, Host: p.hosts[g]}})
	}
	acts = append(acts, Skip{Node{ID: child, Host: p.hosts[child]}})
	return append(acts, p.completion()...)
}

// Offsprings lists the nodes below child, child excluded.
func (p *Phase1) Offsprings(child int) []Node {
	ids := topo.Subtree(p.tree, child)
	nodes := make([]Node, len(ids))
	for i, id := range ids {
		nodes[i] = Node{ID: id, Host: p.hosts[id]}
	}
	return nodes
}

// Children are self's direct children in the spawn tree.
func (p *Phase1) Children() []int { return p.children }

// Host returns the host of a descendant.
func (p *Phase1) Host(id int) string { return p.hosts[id] }

// Done reports whether every direct child connected or failed.
func (p *Phase1) Done() bool {
	return p.started && len(p.connected)+len(p.failed) == len(p.children)
}

func (p *Phase1) completion() []Action {
	if p.Done() && (p.adopt || len(p.failed) == 0) {
		return []Action{Complete{}}
	}
	return nil
}

func (p *Phase1) isChild(id int) bool {
	return id > 0 && id < p.tree.Size() && (p.tree.Parent(id) == p.self || p.adopted[id])
}
