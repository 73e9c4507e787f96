package collective

import (
	"maps"
	"slices"
)

// Members says who takes part in a group's collectives at one daemon.
type Members struct {
	Ranks []int // the daemon's own ranks in the group
	// Children are the children whose subtree holds a rank of the group:
	// the only ones whose parts are waited for and that get the result.
	Children []int
	// Toward says where a rank of the group lives, seen from here: Here,
	// the child below which it lives, or Nowhere. Only a scattering
	// operation (the ring) asks.
	Toward func(rank int) int
	// Below lists the ranks of the group in child's subtree; only the
	// job's group asks, for a child whose ranks all left (ChildLeft).
	Below func(child int) []int
}

// Places Members.Toward gives besides a child.
const (
	Here    = -1
	Nowhere = -2
)

// outsider is the members of a group this daemon has not joined: a
// result that comes down anyway stops here.
var outsider = Members{Toward: func(int) int { return Nowhere }}

// Action is what the driver must do: SendUp, SendDown, Probe or Done.
type Action interface{ action() }

// SendUp: send this subtree's part of collective ID to the parent.
type SendUp struct {
	ID   ID
	Part Part
}

// SendDown: send collective ID's result (Child's share of it) to Child.
type SendDown struct {
	Child int
	ID    ID
	Part  Part
}

// Done: collective ID is complete; the local ranks in it go on with Part
// (for a scattering operation, their own answers only).
type Done struct {
	ID   ID
	Part Part
}

// Probe: ask Child for its part of group collective ID (Probed there),
// which this daemon has just opened and waits for.
type Probe struct {
	Child int
	ID    ID
}

func (SendUp) action()   {}
func (Probe) action()    {}
func (SendDown) action() {}
func (Done) action()     {}

// Machine is the collectives at one daemon.
//
// The rule for a child that fails midway: it is dropped and never waited
// for, nor sent to. Its failure travels up on its own (the job aborts),
// or, with --on-unreachable skip, its children are adopted and take its
// place among the Members given at the launch.
type Machine struct {
	root   bool
	ended  bool
	groups map[string]*group
	open   map[ID]*reduction
	early  map[string][]childPart // parts of groups not joined yet
	failed map[int]bool
	// left: children every rank of the job below which left (ChildLeft).
	left   map[int]bool
	probes []Action // Probe actions of collectives just opened
	// completed is the last Seq of each group's Op completed here: a
	// late or repeated part of it must not open it again. Collectives of
	// one Op complete in Seq order, since every rank enters them and
	// every child sends its parts in that order.
	completed map[series]int
}

// series is one group's collectives of one Op.
type series struct {
	group string
	op    Op
}

// group is one group's members here, known from the launch on.
type group struct {
	load   func() Members // called once, on first need
	loaded *Members
	isRank map[int]bool // Members.Ranks as a set
	// entered counts the collectives of each Op each local rank entered.
	entered map[Op]map[int]int
	// left: local ranks that will enter none of the group's collectives
	// any more; those they did not enter fail (Left).
	left map[int]bool
}

// reduction is one collective's reduce-up at this daemon.
type reduction struct {
	waiting map[int]bool // children whose part has not come
	part    Part         // merged so far
}

// childPart is a child's part that came before this daemon joined the
// group (the launch may reach a child first, along a routing topology
// other than the spawn tree): it waits until the launch says which
// children take part.
type childPart struct {
	child int
	id    ID
	part  Part
}

// New returns the collectives of a daemon; root: it has no parent, and
// completes each collective.
func New(root bool) *Machine {
	return &Machine{root: root, groups: map[string]*group{}, open: map[ID]*reduction{},
		early: map[string][]childPart{}, failed: map[int]bool{}, left: map[int]bool{}, completed: map[series]int{}}
}

// Join says who takes part in group's collectives here (at the launch);
// members is called once, when first needed, so that a job that never
// uses them pays nothing. The children's parts that came before are
// taken now.
func (m *Machine) Join(name string, members func() Members) []Action {
	if m.groups[name] != nil {
		return nil
	}
	m.groups[name] = &group{load: members, entered: map[Op]map[int]int{}, left: map[int]bool{}}
	early := m.early[name]
	delete(m.early, name)
	for _, e := range early {
		if e.child == probe {
			m.at(e.id)
		} else {
			m.take(e.child, e.id, e.part)
		}
	}
	return m.withProbes(m.checkAll(func(id ID) bool { return id.Group == name }))
}

// Enter: local rank entered its next collective of op in group, with its
// part. A rank that is not a member here is ignored.
func (m *Machine) Enter(name string, op Op, rank int, part Part) []Action {
	g := m.groups[name]
	if g == nil || !op.valid() || !g.has(rank) {
		return nil
	}
	if g.entered[op] == nil {
		g.entered[op] = map[int]int{}
	}
	g.entered[op][rank]++
	id := ID{Group: name, Op: op, Seq: g.entered[op][rank]}
	m.at(id).part.merge(part)
	return m.withProbes(m.check(id))
}

// FromChild: child sent its subtree's part of collective id. A part that
// is not expected (a second one, from a child that does not take part or
// was dropped) is ignored.
func (m *Machine) FromChild(child int, id ID, part Part) []Action {
	if !id.Op.valid() {
		return nil
	}
	if m.groups[id.Group] == nil {
		m.early[id.Group] = append(m.early[id.Group], childPart{child, id, part})
		return nil
	}
	if !m.take(child, id, part) {
		return m.withProbes(nil)
	}
	return m.withProbes(m.check(id))
}

// FromParent: the parent sent collective id's result down.
func (m *Machine) FromParent(id ID, result Part) []Action {
	if !id.Op.valid() {
		return nil
	}
	return m.down(id, result)
}

// Left: local rank of group will enter none of its collectives any more
// (it finalised, or exited). Each collective of the group that the rank
// did not enter completes here without it and fails (its part names the
// rank in Gone): the ranks that fence together expect every member. One
// that has not opened here yet does so when the parent probes for it
// (Probed), or, for the job's group, when the parent hears that every
// rank below this daemon left (ChildLeft).
func (m *Machine) Left(name string, rank int) []Action {
	g := m.groups[name]
	if g == nil || g.left[rank] {
		return nil
	}
	if g.loaded == nil && !m.opened(name) {
		// Nothing to fail yet: the members are not worked out (at a
		// large job's every daemon, a list of all its ranks) for a
		// group whose collectives may never open; members() drops a
		// rank that is not one.
		g.left[rank] = true
		return nil
	}
	if !g.has(rank) {
		return nil
	}
	g.left[rank] = true
	return m.withProbes(m.checkAll(func(id ID) bool { return id.Group == name }))
}

// opened says whether a collective of group name is open here.
func (m *Machine) opened(name string) bool {
	for id := range m.open {
		if id.Group == name {
			return true
		}
	}
	return false
}

// Probed: the parent opened collective id of a group and waits for this
// daemon's part: it opens here too, and is probed for below, so that a
// member that left anywhere in the subtree fails it, rather than leave
// its members waiting for a part that never comes. A probe of a group not
// joined yet waits for the Join.
func (m *Machine) Probed(id ID) []Action {
	if !id.Op.valid() || id.Group == "" || id.Seq <= m.completed[series{id.Group, id.Op}] {
		return nil
	}
	if m.groups[id.Group] == nil {
		m.early[id.Group] = append(m.early[id.Group], childPart{child: probe, id: id})
		return nil
	}
	m.at(id)
	return m.withProbes(m.check(id))
}

// Reprobe: child has just linked; the probes for it before went
// nowhere. It is probed again for each group collective that waits for it.
func (m *Machine) Reprobe(child int) []Action {
	var acts []Action
	for _, id := range m.Open() {
		if id.Group != "" && m.open[id].waiting[child] {
			acts = append(acts, Probe{child, id})
		}
	}
	return acts
}

// ChildLeft: every rank of the job below child left. The job's
// collectives (group "") that it sent no part of do not wait for it, and
// count its ranks gone; so a fence that the ranks elsewhere entered fails
// instead of waiting for a daemon that none of whose ranks will enter
// it, and so never opens it.
func (m *Machine) ChildLeft(child int) []Action {
	m.left[child] = true
	for _, id := range m.Open() {
		if r := m.open[id]; id.Group == "" && r.waiting[child] {
			m.childGone(r, id, child)
		}
	}
	return m.checkAll(func(id ID) bool { return id.Group == "" })
}

// childGone counts a child whose ranks left as present in collective id,
// with its ranks gone.
func (m *Machine) childGone(r *reduction, id ID, child int) {
	delete(r.waiting, child)
	if below := m.groups[id.Group].members().Below; below != nil {
		r.part.Gone = append(r.part.Gone, below(child)...)
	}
}

// probe stands, in the parts that came before a Join, for a parent's
// probe.
const probe = -1

// ChildFailed drops a child from every collective, open or to come.
func (m *Machine) ChildFailed(child int) []Action {
	m.failed[child] = true
	for _, r := range m.open {
		delete(r.waiting, child)
	}
	return m.checkAll(func(ID) bool { return true })
}

// End: the job ends. No collective completes here any more; results that
// come from the parent still pass.
func (m *Machine) End() { m.ended = true }

// Open lists the collectives waiting for a part here, in order.
func (m *Machine) Open() []ID {
	return slices.SortedFunc(maps.Keys(m.open), compareIDs)
}

func compareIDs(a, b ID) int {
	switch {
	case a.Group != b.Group:
		if a.Group < b.Group {
			return -1
		}
		return 1
	case a.Op != b.Op:
		return int(a.Op - b.Op)
	}
	return a.Seq - b.Seq
}

func (g *group) members() *Members {
	if g.loaded == nil {
		mem := g.load()
		mem.Children = slices.Sorted(slices.Values(mem.Children))
		g.loaded = &mem
		g.isRank = make(map[int]bool, len(mem.Ranks))
		for _, r := range mem.Ranks {
			g.isRank[r] = true
		}
		maps.DeleteFunc(g.left, func(r int, _ bool) bool { return !g.isRank[r] })
	}
	return g.loaded
}

func (g *group) has(rank int) bool {
	g.members()
	return g.isRank[rank]
}

// at is collective id's reduction, opened on first use. A group's
// (other than the job's) probes the children it waits for; the job's
// counts those whose ranks all left as come, with their ranks gone.
func (m *Machine) at(id ID) *reduction {
	r, ok := m.open[id]
	if !ok {
		r = &reduction{waiting: map[int]bool{}}
		for _, c := range m.groups[id.Group].members().Children {
			if m.failed[c] {
				continue
			}
			r.waiting[c] = true
			switch {
			case id.Group == "" && m.left[c]:
				m.childGone(r, id, c)
			case id.Group != "":
				m.probes = append(m.probes, Probe{c, id})
			}
		}
		m.open[id] = r
	}
	return r
}

// withProbes puts the probes of the collectives just opened before acts.
func (m *Machine) withProbes(acts []Action) []Action {
	if len(m.probes) == 0 {
		return acts
	}
	acts = append(m.probes, acts...)
	m.probes = nil
	return acts
}

// take adds a child's part, if it is still expected.
func (m *Machine) take(child int, id ID, part Part) bool {
	if id.Seq <= m.completed[series{id.Group, id.Op}] {
		return false
	}
	if _, ok := m.open[id]; !ok && !slices.Contains(m.groups[id.Group].members().Children, child) {
		return false
	}
	r := m.at(id)
	if !r.waiting[child] {
		return false
	}
	delete(r.waiting, child)
	r.part.merge(part)
	m.probes = slices.DeleteFunc(m.probes, func(a Action) bool { return a == Probe{child, id} })
	return true
}

// checkAll checks, in order, every open collective that which selects.
func (m *Machine) checkAll(which func(ID) bool) []Action {
	var acts []Action
	for _, id := range m.Open() {
		if which(id) {
			acts = append(acts, m.check(id)...)
		}
	}
	return acts
}

// check completes collective id here once every part is in: it goes up,
// or, at the root, its result comes down.
func (m *Machine) check(id ID) []Action {
	r := m.open[id]
	if r == nil || m.ended || len(r.waiting) > 0 || !m.ranksIn(id) {
		return nil
	}
	delete(m.open, id)
	m.completed[series{id.Group, id.Op}] = id.Seq
	r.part.Gone = append(r.part.Gone, m.goneFrom(id)...)
	if !m.root {
		return []Action{SendUp{id, r.part}}
	}
	result := operations[id.Op].result(r.part)
	result.Gone = slices.Sorted(slices.Values(r.part.Gone))
	return m.down(id, result)
}

// goneFrom lists the local ranks of the group that left before entering
// collective id.
func (m *Machine) goneFrom(id ID) []int {
	g := m.groups[id.Group]
	var gone []int
	for _, rank := range g.members().Ranks {
		if g.left[rank] && g.entered[id.Op][rank] < id.Seq {
			gone = append(gone, rank)
		}
	}
	return gone
}

// ranksIn says whether every local rank of the group entered collective
// id or left.
func (m *Machine) ranksIn(id ID) bool {
	g := m.groups[id.Group]
	for _, rank := range g.members().Ranks {
		if g.entered[id.Op][rank] < id.Seq && !g.left[rank] {
			return false
		}
	}
	return true
}

// down passes a result on to the live children that take part (of the
// job's, those whose ranks have not all left) and hands it to the local
// ranks.
func (m *Machine) down(id ID, result Part) []Action {
	mem := &outsider
	if g := m.groups[id.Group]; g != nil {
		mem = g.members()
	}
	var shares map[int]Part
	if operations[id.Op].scatters {
		shares = result.split(mem.Toward)
	}
	var acts []Action
	for _, c := range mem.Children {
		share, ok := result, true
		if shares != nil {
			share, ok = shares[c]
		}
		if ok && !m.failed[c] && !(id.Group == "" && m.left[c]) {
			acts = append(acts, SendDown{c, id, share})
		}
	}
	if shares != nil {
		result = shares[Here]
	}
	return append(acts, Done{id, result})
}
