package routed_test

// A deterministic discrete-event simulation of the whole launch: phase 1
// (spawn.Phase1 at every daemon), phase 2 (routed.Allgather) and phase 3
// (a launch broadcast from mpirun through a routed.Router per daemon),
// driven together with no goroutine, socket or clock.
//
// The model. Daemon ids are 0..n, 0 is mpirun. A SpawnNode action of
// daemon p sends a spawn message to the child c (the launch service); when
// it is delivered, c exists and sends connect to p; delivered, it is
// Connected(c) at p, whose SendSubtree goes back to c; delivered, c calls
// Start on its Phase1 and starts its Allgather (children: the Phase1's,
// parent: its spawn parent), then its routers. Allgather Sends are address
// messages. When mpirun's Phase1 is Complete, it starts one launch
// broadcast per routing topology: a daemon that gets the launch forwards it
// to each daemon of its Fanout through its Router, whose known is the
// daemon's Allgather.Lookup; Learned is called with the ids of the entries
// each Receive reports fresh (unless the router holds nothing, when it
// would release nothing: that spares n² lookups). All three routing topologies (radix, binomial,
// direct) ride on the same run of phases 1 and 2: their broadcasts are
// independent, and phases 1 and 2 do not depend on the routing.
//
// Two delivery orders. In random order every directed link is a FIFO
// queue and each step delivers the head of a link drawn by a seeded
// math/rand, so that many interleavings across links are exercised. In
// synchronous rounds every message sent in round r is delivered in round
// r+1 (in the order sent), and each communication takes one round: the
// paper's model for its completion times.

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"prsh/routed"
	"prsh/spawn"
	"prsh/topo"
)

const maxDaemons = 2000

// hosts and addrs are the nodes' host names and the daemons' contact
// addresses, by id.
var hosts, addrs = func() (h, a []string) {
	for id := 0; id <= maxDaemons; id++ {
		h = append(h, fmt.Sprintf("node%04d", id))
		a = append(a, fmt.Sprintf("tcp://10.%d.%d.%d:5%04d", id>>16, id>>8&255, id&255, id))
	}
	return h, a
}()

type kind uint8

const (
	kSpawn   kind = iota // phase 1: the launch service starts the child
	kConnect             // phase 1: the child calls back its parent
	kSubtree             // phase 1: the parent hands the child its subtree
	kAddrs               // phase 2: contact addresses
	kLaunch              // phase 3: the application launch broadcast
)

type message struct {
	kind     kind
	from, to int
	route    int // kLaunch: index of the routing topology
	nodes    []spawn.Node
	entries  []routed.Entry
}

// launch is what a Router holds: a broadcast of one routing topology, for
// one of the daemon's Fanout.
type launch struct{ route, target int }

type daemon struct {
	id        int
	spawned   bool
	p1        *spawn.Phase1
	ag        *routed.Allgather
	routers   []*routed.Router[launch]
	completes int  // phase-1 Complete actions
	agDone    bool // Allgather Complete seen
	doneAt    int  // rounds mode: the round it became Complete

	launched   []int // per routing topology: launches received
	launchFrom []int // per routing topology: who sent it (-1: mpirun itself)
	maxHeld    []int // per routing topology: the most its Router ever held

	sent2      int // phase-2 messages sent
	fromParent int // phase-2 messages received from the spawn parent
	entriesIn  int // phase-2 entries received

	upUsed     bool           // a phase-1 or phase-2 message crossed the link to its spawn parent
	routePeers []map[int]bool // per routing topology: peers of launch messages
}

// config is one simulated launch.
type config struct {
	n          int
	delta      int    // the spawn degree δ
	spawnRoute string // δ = 0: the routing topology whose Tree is the spawn tree
	tree       topo.Tree
	routes     []routed.Topology
	seed       uint64 // random order; ignored in rounds mode
	rounds     bool   // synchronous rounds instead of random order
}

func (c config) String() string {
	order := fmt.Sprintf("random order, seed %d", c.seed)
	if c.rounds {
		order = "synchronous rounds"
	}
	return fmt.Sprintf("n=%d δ=%d (spawn tree %s), %s", c.n, c.delta, c.treeName(), order)
}

func (c config) treeName() string {
	if c.delta > 0 {
		return fmt.Sprintf("radix %d", c.delta)
	}
	return "of " + c.spawnRoute + " routing"
}

// newConfig returns the launch of n daemons with spawn degree delta; for
// delta = 0 the spawn tree is the Tree of the routing topology spawnRoute.
func newConfig(n, delta int, spawnRoute string) config {
	radix := routed.DefaultRadix
	if delta > 0 {
		radix = delta
	}
	c := config{n: n, delta: delta, spawnRoute: spawnRoute}
	for _, name := range routed.Names {
		r, err := routed.New(name, n+1, radix)
		if err != nil {
			panic(err)
		}
		c.routes = append(c.routes, r)
		if delta == 0 && name == spawnRoute {
			c.tree = r.Tree()
		}
	}
	if delta > 0 {
		c.tree = topo.Radix(n+1, delta)
	}
	return c
}

// sim is one run. Its methods record the first error and stop.
type sim struct {
	config
	d     []*daemon
	net   network
	err   error
	steps int

	// Rounds mode: when the last daemon ended each phase.
	phase1End, phase2End int
	launchEnd            []int
}

type network interface {
	push(m message)
	pop() (message, bool)
	now() int // the current round; 0 in random order
}

func run(c config) *sim {
	s := &sim{config: c, d: make([]*daemon, c.n+1), launchEnd: make([]int, len(c.routes))}
	if c.rounds {
		s.net = &rounds{}
	} else {
		s.net = newShuffled(c.seed)
	}
	for id := range s.d {
		d := &daemon{
			id:       id,
			launched: make([]int, len(c.routes)), launchFrom: make([]int, len(c.routes)),
			maxHeld: make([]int, len(c.routes)), routePeers: make([]map[int]bool, len(c.routes)),
		}
		for i := range d.routePeers {
			d.routePeers[i] = map[int]bool{}
		}
		s.d[id] = d
	}
	s.startMpirun()
	// A launch is O(n²) entries in all; anything far above is a livelock.
	limit := 64*(c.n+1)*(c.n+1) + 10_000
	for s.err == nil {
		m, ok := s.net.pop()
		if !ok {
			break
		}
		if s.steps++; s.steps > limit {
			s.fail("still running after %d deliveries", limit)
			break
		}
		s.deliver(m)
	}
	return s
}

func (s *sim) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf(format, args...)
	}
}

func (s *sim) startMpirun() {
	d := s.d[0]
	d.spawned = true
	d.p1 = spawn.NewPhase1(0, s.tree)
	all := make([]spawn.Node, s.n)
	for i := range all {
		all[i] = spawn.Node{ID: i + 1, Host: hosts[i+1]}
	}
	s.start(d, all, -1)
}

// start is Start at daemon d with its subtree desc: Phase1, then the
// Allgather and routers, then the Phase1 actions and the Allgather's Start.
func (s *sim) start(d *daemon, desc []spawn.Node, parent int) {
	acts, err := d.p1.Start(desc)
	if err != nil {
		s.fail("daemon %d: Start: %v", d.id, err)
		return
	}
	if kids := s.tree.Children(d.id); !slices.Equal(d.p1.Children(), kids) {
		s.fail("daemon %d: Phase1 children %v, want %v", d.id, d.p1.Children(), kids)
		return
	}
	d.ag = routed.NewAllgather(d.id, addrs[d.id], parent, d.p1.Children(), s.n+1)
	for _, r := range s.routes {
		ag := d.ag
		d.routers = append(d.routers, routed.NewRouter[launch](d.id, r, func(id int) bool {
			_, ok := ag.Lookup(id)
			return ok
		}))
	}
	s.act(d, acts)
	s.sendAddrs(d, d.ag.Start())
}

func (s *sim) act(d *daemon, acts []spawn.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case spawn.SpawnNode:
			c := a.Node.ID
			if c <= 0 || c > s.n || s.tree.Parent(c) != d.id || a.Node.Host != hosts[c] {
				s.fail("daemon %d: SpawnNode %+v: not a child of it on its host %s", d.id, a.Node, hosts[max(0, min(c, s.n))])
				return
			}
			s.send(message{kind: kSpawn, from: d.id, to: c})
		case spawn.SendSubtree:
			s.send(message{kind: kSubtree, from: d.id, to: a.To, nodes: a.Nodes})
		case spawn.Complete:
			if d.completes++; d.completes > 1 {
				s.fail("daemon %d: phase 1 Complete twice", d.id)
				return
			}
			s.phase1End = max(s.phase1End, s.net.now())
			if d.id == 0 {
				for r := range s.routes {
					d.launched[r], d.launchFrom[r] = 1, -1
					s.forward(d, r)
				}
			}
		default:
			s.fail("daemon %d: unknown action %T", d.id, a)
		}
	}
}

// send checks that phases 1 and 2 only talk over the spawn tree, and books
// the link.
func (s *sim) send(m message) {
	if m.kind == kLaunch {
		s.d[m.from].routePeers[m.route][m.to] = true
		s.d[m.to].routePeers[m.route][m.from] = true
	} else {
		if m.to < 0 || m.to > s.n || (s.tree.Parent(m.to) != m.from && s.tree.Parent(m.from) != m.to) {
			s.fail("daemon %d: a phase 1 or 2 message (kind %d) to %d, not a spawn-tree neighbour", m.from, m.kind, m.to)
			return
		}
		if s.tree.Parent(m.to) == m.from {
			s.d[m.to].upUsed = true
		} else {
			s.d[m.from].upUsed = true
		}
	}
	s.net.push(m)
}

func (s *sim) sendAddrs(d *daemon, sends []routed.Send) {
	for _, x := range sends {
		d.sent2++
		s.send(message{kind: kAddrs, from: d.id, to: x.To, entries: x.Entries})
	}
}

func (s *sim) sendLaunches(d *daemon, r int, out []routed.Delivery[launch]) {
	for _, x := range out {
		if x.Msg.route != r || x.Via != x.Msg.target {
			s.fail("daemon %d: %s router delivers %+v via %d, want the broadcast straight to its target", d.id, s.routes[r].Name(), x.Msg, x.Via)
			return
		}
		s.send(message{kind: kLaunch, from: d.id, to: x.Via, route: r})
	}
}

// forward passes d's launch of routing topology r on to its Fanout.
func (s *sim) forward(d *daemon, r int) {
	router := d.routers[r]
	for _, c := range s.routes[r].Fanout(d.id) {
		s.sendLaunches(d, r, router.Route(c, launch{r, c}))
	}
	d.maxHeld[r] = max(d.maxHeld[r], router.Held())
}

func (s *sim) deliver(m message) {
	d := s.d[m.to]
	switch m.kind {
	case kSpawn:
		if d.spawned {
			s.fail("daemon %d spawned twice (again by %d)", d.id, m.from)
			return
		}
		d.spawned = true
		d.p1 = spawn.NewPhase1(d.id, s.tree)
		s.send(message{kind: kConnect, from: d.id, to: m.from})
	case kConnect:
		acts, err := d.p1.Connected(m.from)
		if err != nil {
			s.fail("daemon %d: Connected(%d): %v", d.id, m.from, err)
			return
		}
		s.act(d, acts)
	case kSubtree:
		s.start(d, m.nodes, m.from)
	case kAddrs:
		if d.ag == nil {
			s.fail("daemon %d: addresses from %d before its phase 2 started", d.id, m.from)
			return
		}
		if m.from == s.tree.Parent(d.id) {
			d.fromParent++
		}
		d.entriesIn += len(m.entries)
		for _, e := range m.entries {
			if e.ID < 0 || e.ID > s.n || e.Addr != addrs[e.ID] {
				s.fail("daemon %d: got the entry %+v from %d, not a daemon's address", d.id, e, m.from)
				return
			}
		}
		sends, fresh, err := d.ag.Receive(m.from, m.entries)
		if err != nil {
			s.fail("daemon %d: Receive from %d: %v", d.id, m.from, err)
			return
		}
		s.sendAddrs(d, sends)
		if d.ag.Complete() && !d.agDone {
			d.agDone, d.doneAt = true, s.net.now()
			s.phase2End = max(s.phase2End, d.doneAt)
		}
		var ids []int
		for r, router := range d.routers {
			if router.Held() == 0 {
				continue // nothing to release: spare the lookups
			}
			if ids == nil {
				for _, e := range fresh {
					ids = append(ids, e.ID)
				}
			}
			s.sendLaunches(d, r, router.Learned(ids...))
		}
	case kLaunch:
		if d.ag == nil {
			s.fail("daemon %d: %s launch from %d before it started", d.id, s.routes[m.route].Name(), m.from)
			return
		}
		if d.launched[m.route]++; d.launched[m.route] > 1 {
			s.fail("daemon %d: %s launch received twice (again from %d)", d.id, s.routes[m.route].Name(), m.from)
			return
		}
		d.launchFrom[m.route] = m.from
		s.launchEnd[m.route] = max(s.launchEnd[m.route], s.net.now())
		s.forward(d, m.route)
	}
}

// rounds delivers, in round r+1, every message sent in round r, in the
// order sent. Round 0 is mpirun's Start.
type rounds struct {
	cur, next []message
	i, round  int
}

func (q *rounds) push(m message) { q.next = append(q.next, m) }
func (q *rounds) now() int       { return q.round }

func (q *rounds) pop() (message, bool) {
	if q.i == len(q.cur) {
		if len(q.next) == 0 {
			return message{}, false
		}
		clear(q.cur)
		q.cur, q.next, q.i = q.next, q.cur[:0], 0
		q.round++
	}
	q.i++
	return q.cur[q.i-1], true
}

// shuffled keeps a FIFO queue per directed link and delivers the head of
// a link drawn at random among those with messages waiting.
type shuffled struct {
	rng    *rand.Rand
	links  map[[2]int]*link
	active []*link
}

type link struct {
	q    []message
	head int
	slot int // index in active, when waiting
}

func newShuffled(seed uint64) *shuffled {
	return &shuffled{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), links: map[[2]int]*link{}}
}

func (q *shuffled) now() int { return 0 }

func (q *shuffled) push(m message) {
	key := [2]int{m.from, m.to}
	l := q.links[key]
	if l == nil {
		l = &link{}
		q.links[key] = l
	}
	if l.head == len(l.q) {
		l.slot = len(q.active)
		q.active = append(q.active, l)
	}
	l.q = append(l.q, m)
}

func (q *shuffled) pop() (message, bool) {
	if len(q.active) == 0 {
		return message{}, false
	}
	i := q.rng.IntN(len(q.active))
	l := q.active[i]
	m := l.q[l.head]
	l.q[l.head] = message{}
	if l.head++; l.head == len(l.q) {
		l.q, l.head = l.q[:0], 0
		last := q.active[len(q.active)-1]
		q.active[i], last.slot = last, i
		q.active = q.active[:len(q.active)-1]
	}
	return m, true
}

// spawnPeers are the daemons d exchanged phase-1 or phase-2 messages with.
func (s *sim) spawnPeers(d *daemon) map[int]bool {
	peers := map[int]bool{}
	if d.upUsed {
		peers[s.tree.Parent(d.id)] = true
	}
	for _, c := range s.tree.Children(d.id) {
		if s.d[c].upUsed {
			peers[c] = true
		}
	}
	return peers
}

// sameTree reports whether a and b are the same tree.
func sameTree(a, b topo.Tree) bool {
	if a.Size() != b.Size() {
		return false
	}
	for id := 1; id < a.Size(); id++ {
		if a.Parent(id) != b.Parent(id) {
			return false
		}
	}
	return true
}

// shape is what the checks need to know of a tree, in O(size).
type shape struct {
	kids   []int // number of children, by id
	depth  []int // by id
	height int
	// ancKids[id] is Σ |Children(q)| over the proper ancestors q of id.
	ancKids []int
	maxKids int
}

func shapeOf(t topo.Tree) shape {
	n := t.Size()
	sh := shape{kids: make([]int, n), depth: make([]int, n), ancKids: make([]int, n)}
	for id := range n {
		sh.kids[id] = len(t.Children(id))
		sh.maxKids = max(sh.maxKids, sh.kids[id])
	}
	for _, id := range topo.Subtree(t, 0) { // preorder: parents first
		p := t.Parent(id)
		sh.depth[id] = sh.depth[p] + 1
		sh.ancKids[id] = sh.ancKids[p] + sh.kids[p]
		sh.height = max(sh.height, sh.depth[id])
	}
	return sh
}
