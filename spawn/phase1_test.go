package spawn_test

import (
	"fmt"
	"reflect"
	"testing"

	"prsh/internal/purity"
	"prsh/spawn"
	"prsh/topo"
)

// tree is the spawn tree of the tests: mpirun and 10 daemons, degree 3.
//
//	0 ─┬─ 1 ─ 4 5 6
//	   ├─ 2 ─ 7 8 9
//	   └─ 3 ─ 10
var tree = topo.Radix(11, 3)

func host(id int) string { return fmt.Sprintf("node%02d", id) }

func nodes(ids ...int) []spawn.Node {
	out := make([]spawn.Node, len(ids))
	for i, id := range ids {
		out[i] = spawn.Node{ID: id, Host: host(id)}
	}
	return out
}

func spawns(ids ...int) []spawn.Action {
	var acts []spawn.Action
	for _, id := range ids {
		acts = append(acts, spawn.SpawnNode{Node: spawn.Node{ID: id, Host: host(id)}})
	}
	return acts
}

var all = nodes(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)

func TestStart(t *testing.T) {
	tests := []struct {
		name    string
		self    int
		desc    []spawn.Node
		want    []spawn.Action
		wantErr bool
	}{
		{name: "mpirun spawns its children", self: 0, desc: all, want: spawns(1, 2, 3)},
		{name: "an orted spawns its children", self: 1, desc: nodes(4, 5, 6), want: spawns(4, 5, 6)},
		{name: "subtree in any order", self: 2, desc: nodes(9, 7, 8), want: spawns(7, 8, 9)},
		{name: "one child", self: 3, desc: nodes(10), want: spawns(10)},
		{name: "leaf completes at once", self: 4, desc: nil, want: []spawn.Action{spawn.Complete{}}},
		{name: "leaf with an empty list", self: 10, desc: nodes(), want: []spawn.Action{spawn.Complete{}}},

		{name: "a node missing", self: 1, desc: nodes(4, 5), wantErr: true},
		{name: "a node too many", self: 1, desc: nodes(4, 5, 6, 7), wantErr: true},
		{name: "a node of another subtree", self: 1, desc: nodes(4, 5, 7), wantErr: true},
		{name: "a node twice", self: 1, desc: nodes(4, 4, 5), wantErr: true},
		{name: "self in its own list", self: 1, desc: nodes(1, 4, 5), wantErr: true},
		{name: "the parent's whole list", self: 1, desc: all, wantErr: true},
		{name: "mpirun missing a node", self: 0, desc: nodes(1, 2, 3, 4, 5, 6, 7, 8, 9), wantErr: true},
		{name: "mpirun given itself", self: 0, desc: nodes(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), wantErr: true},
		{name: "leaf given a node", self: 4, desc: nodes(5), wantErr: true},
		{name: "a node beyond the tree", self: 3, desc: nodes(11), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := spawn.NewPhase1(tt.self, tree)
			got, err := p.Start(tt.desc)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("daemon %d: Start(%v) = %v, want an error", tt.self, tt.desc, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("daemon %d: Start(%v): %v", tt.self, tt.desc, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("daemon %d: Start(%v) = %v, want %v", tt.self, tt.desc, got, tt.want)
			}
			if kids := tree.Children(tt.self); !reflect.DeepEqual(p.Children(), kids) {
				t.Errorf("daemon %d: Children() = %v, want %v", tt.self, p.Children(), kids)
			}
			for _, n := range tt.desc {
				if h := p.Host(n.ID); h != n.Host {
					t.Errorf("daemon %d: Host(%d) = %q, want %q", tt.self, n.ID, h, n.Host)
				}
			}
			leaf := len(tree.Children(tt.self)) == 0
			if p.Done() != leaf {
				t.Errorf("daemon %d: Done() = %v after Start, want %v", tt.self, p.Done(), leaf)
			}
		})
	}
}

func TestStartTwice(t *testing.T) {
	for _, self := range []int{0, 4} {
		p := spawn.NewPhase1(self, tree)
		desc := nodes(topo.Subtree(tree, self)...)
		if _, err := p.Start(desc); err != nil {
			t.Fatalf("daemon %d: first Start: %v", self, err)
		}
		if got, err := p.Start(desc); err == nil {
			t.Errorf("daemon %d: second Start = %v, want an error", self, got)
		}
	}
}

// event is one step of a daemon's phase 1 after Start.
type event struct {
	failed  bool // Failed(id) rather than Connected(id)
	id      int
	want    []spawn.Action
	wantErr bool
}

func connected(id int, want ...spawn.Action) event { return event{id: id, want: want} }
func refused(id int) event                         { return event{id: id, wantErr: true} }
func failed(id int, want ...spawn.Action) event    { return event{failed: true, id: id, want: want} }

func subtree(to int, ids ...int) spawn.SendSubtree {
	return spawn.SendSubtree{To: to, Nodes: nodes(ids...)}
}

func TestEvents(t *testing.T) {
	done := spawn.Complete{}
	tests := []struct {
		name     string
		self     int
		events   []event
		wantDone bool
	}{
		{
			name:     "complete once the last child connects",
			self:     0,
			events:   []event{connected(1, subtree(1, 4, 5, 6)), connected(2, subtree(2, 7, 8, 9)), connected(3, subtree(3, 10), done)},
			wantDone: true,
		},
		{
			name:     "children connect in any order",
			self:     0,
			events:   []event{connected(3, subtree(3, 10)), connected(1, subtree(1, 4, 5, 6)), connected(2, subtree(2, 7, 8, 9), done)},
			wantDone: true,
		},
		{
			name:     "leaf children get empty subtrees",
			self:     1,
			events:   []event{connected(5, subtree(5)), connected(4, subtree(4)), connected(6, subtree(6), done)},
			wantDone: true,
		},
		{
			name:   "a grandchild is not a child",
			self:   0,
			events: []event{refused(4), refused(10)},
		},
		{
			name:   "neither self, the parent, a sibling, a cousin nor a stranger",
			self:   1,
			events: []event{refused(1), refused(0), refused(2), refused(7), refused(-1), refused(11), refused(1 << 40)},
		},
		{
			name:   "a child connects twice",
			self:   0,
			events: []event{connected(1, subtree(1, 4, 5, 6)), refused(1)},
		},
		{
			name:   "a failed child connects after all",
			self:   0,
			events: []event{failed(2), refused(2)},
		},
		{
			name:     "a failure stops Complete",
			self:     0,
			events:   []event{connected(1, subtree(1, 4, 5, 6)), failed(2), connected(3, subtree(3, 10))},
			wantDone: true,
		},
		{
			name:     "the last child fails",
			self:     0,
			events:   []event{connected(1, subtree(1, 4, 5, 6)), connected(2, subtree(2, 7, 8, 9)), failed(3)},
			wantDone: true,
		},
		{
			name:     "every child fails",
			self:     3,
			events:   []event{failed(10)},
			wantDone: true,
		},
		{
			name:     "failures of strangers and repeated failures are ignored",
			self:     0,
			events:   []event{failed(4), failed(0), failed(-1), connected(1, subtree(1, 4, 5, 6)), failed(1), failed(3), failed(3), connected(2, subtree(2, 7, 8, 9))},
			wantDone: true,
		},
		{
			name:     "a failure after Complete changes nothing",
			self:     3,
			events:   []event{connected(10, subtree(10), done), failed(10), refused(10)},
			wantDone: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := spawn.NewPhase1(tt.self, tree)
			if _, err := p.Start(nodes(topo.Subtree(tree, tt.self)...)); err != nil {
				t.Fatalf("daemon %d: Start: %v", tt.self, err)
			}
			for i, ev := range tt.events {
				var got []spawn.Action
				var err error
				call := fmt.Sprintf("Connected(%d)", ev.id)
				if ev.failed {
					call = fmt.Sprintf("Failed(%d)", ev.id)
					got = p.Failed(ev.id)
				} else {
					got, err = p.Connected(ev.id)
				}
				switch {
				case ev.wantErr && err == nil:
					t.Fatalf("daemon %d, event %d: %s = %v, want an error", tt.self, i, call, got)
				case !ev.wantErr && err != nil:
					t.Fatalf("daemon %d, event %d: %s: %v", tt.self, i, call, err)
				case !reflect.DeepEqual(got, ev.want):
					t.Fatalf("daemon %d, event %d: %s = %v, want %v", tt.self, i, call, got, ev.want)
				}
			}
			if p.Done() != tt.wantDone {
				t.Errorf("daemon %d: Done() = %v, want %v", tt.self, p.Done(), tt.wantDone)
			}
		})
	}
}

// TestCompleteOnce runs Phase1 on every daemon of trees of several shapes,
// children connecting in the reverse order: each daemon completes exactly
// once, when its last child connects (at Start for a leaf), and hands each
// child exactly its subtree.
func TestCompleteOnce(t *testing.T) {
	trees := map[string]topo.Tree{
		"Radix(40, 1)": topo.Radix(40, 1), "Radix(40, 2)": topo.Radix(40, 2), "Radix(40, 5)": topo.Radix(40, 5),
		"Binomial(40)": topo.Binomial(40), "Star(40)": topo.Star(40), "Radix(1, 3)": topo.Radix(1, 3),
	}
	for name, tr := range trees {
		for self := range tr.Size() {
			p := spawn.NewPhase1(self, tr)
			acts, err := p.Start(nodes(topo.Subtree(tr, self)...))
			if err != nil {
				t.Fatalf("%s, daemon %d: Start: %v", name, self, err)
			}
			kids := tr.Children(self)
			for i := len(kids) - 1; i >= 0; i-- {
				more, err := p.Connected(kids[i])
				if err != nil {
					t.Fatalf("%s, daemon %d: Connected(%d): %v", name, self, kids[i], err)
				}
				want := subtree(kids[i], topo.Subtree(tr, kids[i])...)
				if len(more) == 0 || !reflect.DeepEqual(more[0], want) {
					t.Fatalf("%s, daemon %d: Connected(%d) = %v, want %v first", name, self, kids[i], more, want)
				}
				acts = append(acts, more[1:]...)
			}
			completes := 0
			for _, a := range acts {
				if _, ok := a.(spawn.Complete); ok {
					completes++
				}
			}
			if completes != 1 || !p.Done() {
				t.Errorf("%s, daemon %d: %d Complete actions and Done() = %v, want 1 and true", name, self, completes, p.Done())
			}
		}
	}
}

func TestDoneBeforeStart(t *testing.T) {
	if p := spawn.NewPhase1(4, tree); p.Done() {
		t.Error("a leaf is Done before Start")
	}
}

func TestPure(t *testing.T) { purity.Check(t, "prsh/spawn") }

// TestAdoptOrphans: with adoption, a failed child is skipped and its
// children are spawned by its parent, who hands them their own subtrees.
func TestAdoptOrphans(t *testing.T) {
	p := spawn.NewPhase1(0, tree)
	p.AdoptOrphans()
	if _, err := p.Start(all); err != nil {
		t.Fatal(err)
	}
	got := p.Failed(2)
	want := append(spawns(7, 8, 9), spawn.Skip{Node: spawn.Node{ID: 2, Host: host(2)}})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Failed(2) = %v, want %v", got, want)
	}
	for _, c := range []int{1, 3, 7, 8} {
		acts, err := p.Connected(c)
		if err != nil || len(acts) != 1 {
			t.Fatalf("Connected(%d) = %v, %v", c, acts, err)
		}
	}
	if acts := p.Failed(9); !reflect.DeepEqual(acts, []spawn.Action{spawn.Skip{Node: spawn.Node{ID: 9, Host: host(9)}}, spawn.Complete{}}) {
		t.Fatalf("a leaf's failure after everyone else = %v, want Skip then Complete", acts)
	}
	if _, err := p.Connected(4); err == nil {
		t.Fatal("daemon 4 is a grandchild, not adopted: Connected must refuse it")
	}
}

// TestNoAdoptionByDefault: a failed child stops Complete and adopts no one.
func TestNoAdoptionByDefault(t *testing.T) {
	p := spawn.NewPhase1(0, tree)
	p.Start(all)
	if acts := p.Failed(2); len(acts) != 0 {
		t.Fatalf("Failed without adoption = %v, want nothing", acts)
	}
	p.Connected(1)
	if acts, _ := p.Connected(3); len(acts) != 1 {
		t.Fatalf("Complete must not follow a failure: %v", acts)
	}
}
