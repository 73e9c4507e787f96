package job

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MapBy is the policy that assigns ranks to nodes.
type MapBy int

const (
	// MapBySlot fills each node's slots before moving to the next, keeping
	// neighbouring ranks on the same node (Open MPI's default).
	MapBySlot MapBy = iota
	// MapByNode deals ranks round robin over the nodes.
	MapByNode
)

// String returns the --map-by spelling of m.
func (m MapBy) String() string {
	switch m {
	case MapBySlot:
		return "slot"
	case MapByNode:
		return "node"
	}
	return fmt.Sprintf("MapBy(%d)", int(m))
}

// ParseMapBy parses a --map-by value: "slot" or "node", case-insensitive.
// "core" and "hwthread" mean slot because mpirun knows no node's topology,
// so a slot stands for a core or a hardware thread; "" also means slot,
// the default, so an unset flag needs no special case.
func ParseMapBy(s string) (MapBy, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); {
	case v == "", v == "slot", v == "core", v == "hwthread":
		return MapBySlot, nil
	case v == "node":
		return MapByNode, nil
	case strings.HasPrefix(v, "ppr:"):
		return 0, fmt.Errorf("--map-by %q: ppr is a count per node, see ParseMapping", s)
	}
	return 0, fmt.Errorf("unknown --map-by value %q (want slot, node, core, hwthread, socket, numa, l3cache or ppr:N:node)", s)
}

// ParseMapping parses a --map-by value as ParseMapBy does, and Open MPI's
// "ppr:N:node" (N ranks per node), which is -npernode N: perNode is N, or
// 0 for the other values. Other ppr resources need a topology prsh does
// not know.
func ParseMapping(s string) (m MapBy, perNode int, err error) {
	v := strings.ToLower(strings.TrimSpace(s))
	rest, ok := strings.CutPrefix(v, "ppr:")
	if !ok {
		m, err = ParseMapBy(s)
		return m, 0, err
	}
	count, resource, _ := strings.Cut(rest, ":")
	if resource != "node" {
		return 0, 0, fmt.Errorf("--map-by %q: only ppr:N:node is supported (prsh knows no sockets or cores)", s)
	}
	if perNode, err = parseCount(count); err != nil {
		return 0, 0, fmt.Errorf("--map-by %q: count %w", s, err)
	}
	return MapBySlot, perNode, nil
}

// Options are the mpirun flags that shape the job map.
type Options struct {
	NP       int // 0 = default: one rank per slot (or NPerNode per node if set)
	NPerNode int // 0 = unset
	// PerNodeFlag is how the user asked for NPerNode, for messages:
	// "--map-by ppr:2:node"; "" = -npernode.
	PerNodeFlag   string
	MapBy         MapBy
	Oversubscribe bool
	// PE is the slots each rank takes (Open MPI's --map-by slot:PE=N,
	// which binds a rank to N cores); 0 or 1: one.
	PE int
}

func (o Options) perNodeFlag() string {
	return cmp.Or(o.PerNodeFlag, fmt.Sprintf("-npernode %d", o.NPerNode))
}

// check rejects options that no host list could satisfy.
func (o Options) check() error {
	switch {
	case o.NP < 0:
		return fmt.Errorf("-np must not be negative (got %d)", o.NP)
	case o.NPerNode < 0:
		return fmt.Errorf("-npernode must not be negative (got %d)", o.NPerNode)
	case o.NP > MaxRanks:
		return fmt.Errorf("-np %d is more than the limit of %d ranks", o.NP, MaxRanks)
	case o.MapBy != MapBySlot && o.MapBy != MapByNode:
		return fmt.Errorf("unknown mapping policy %v", o.MapBy)
	case o.PE < 0 || o.PE > MaxHostSlots:
		return fmt.Errorf("PE=%d: want a count of cores from 1 to %d", o.PE, MaxHostSlots)
	}
	return nil
}

// Map is the job map: which node runs which rank. Node i of Nodes is
// daemon i+1 (daemon 0 is mpirun itself).
type Map struct {
	Nodes    []Host // unique hosts in the order first named
	RankNode []int  // RankNode[r] = index into Nodes of rank r
}

// Build places ranks on hosts following Open MPI's rules. Hosts are
// validated and duplicate names merged first (their slots add up), as the
// parsers do, so a hand-built list behaves like a parsed one.
func Build(hosts []Host, opt Options) (*Map, error) {
	nodes, err := mergeHosts(hosts)
	if err != nil {
		return nil, err
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	rooms, err := roomsOf(nodes, opt)
	if err != nil {
		return nil, err
	}
	var rankNode []int
	if opt.NPerNode > 0 {
		rankNode, err = mapPerNode(rooms, opt)
	} else {
		rankNode, err = mapBySlots(rooms, opt)
	}
	if err != nil {
		return nil, err
	}
	return &Map{Nodes: nodes, RankNode: rankNode}, nil
}

// roomsOf is nodes with their slots counted in ranks of PE slots each,
// which the mappers place as if each took one. Where a rank takes more
// slots than a node has, it fails unless --oversubscribe, which lets the
// node hold one such rank (and max_slots likewise). The capacity of the
// whole list is checked here, in slots, for the messages to count slots.
func roomsOf(nodes []Host, opt Options) ([]Host, error) {
	pe := max(opt.PE, 1)
	if pe == 1 {
		return nodes, nil
	}
	rooms := slices.Clone(nodes)
	total := 0
	for i, h := range nodes {
		if h.Slots < pe && !opt.Oversubscribe {
			return nil, fmt.Errorf("host %s has %s, fewer than the %d each rank takes (PE=%d); use --oversubscribe to allow it",
				h.Name, Slots(h.Slots), pe, pe)
		}
		rooms[i].Slots = max(h.Slots/pe, 1)
		if h.MaxSlots > 0 {
			rooms[i].MaxSlots = max(h.MaxSlots/pe, 1)
		}
		total = min(total+rooms[i].Slots, MaxRanks+1)
	}
	np := opt.NP
	if opt.NPerNode > 0 && np == 0 {
		np = min(opt.NPerNode*len(nodes), MaxRanks+1)
	}
	if np > total && !opt.Oversubscribe {
		return nil, fmt.Errorf("%d ranks of PE=%d take %d slots, more than the %s available; use --oversubscribe to allow it",
			np, pe, np*pe, Slots(totalSlots(nodes)))
	}
	return rooms, nil
}

// mergeHosts validates hosts and merges repeated names.
func mergeHosts(hosts []Host) ([]Host, error) {
	if len(hosts) == 0 {
		return nil, errors.New("no hosts given")
	}
	var set hostSet
	for _, h := range hosts {
		if err := checkHost(h); err != nil {
			return nil, err
		}
		if err := set.add(h); err != nil {
			return nil, err
		}
	}
	return set.hosts, nil
}

// mapPerNode places -npernode ranks on every node, or fewer when -np
// stops it first.
func mapPerNode(nodes []Host, opt Options) ([]int, error) {
	per, n := max(opt.NPerNode, 1), len(nodes)
	if per > MaxRanks/n {
		if opt.NP == 0 {
			return nil, fmt.Errorf("%s on %s is more than the limit of %d ranks", opt.perNodeFlag(), count(n, "node"), MaxRanks)
		}
	} else if opt.NP > per*n {
		return nil, fmt.Errorf("-np %d exceeds the %s that %s allows on %s; raise it or add hosts",
			opt.NP, count(per*n, "rank"), opt.perNodeFlag(), count(n, "node"))
	}
	np := opt.NP
	if np == 0 {
		np = per * n
	}
	rankNode := make([]int, np)
	for r := range rankNode {
		if opt.MapBy == MapByNode {
			rankNode[r] = r % n
		} else {
			rankNode[r] = r / per
		}
	}
	return rankNode, checkPerNode(nodes, rankNode, opt)
}

// checkPerNode checks the ranks -npernode put on each node against that
// node's slots.
func checkPerNode(nodes []Host, rankNode []int, opt Options) error {
	counts := make([]int, len(nodes))
	for _, i := range rankNode {
		counts[i]++
	}
	for i, h := range nodes {
		switch c := counts[i]; {
		case h.MaxSlots > 0 && c > h.MaxSlots:
			return fmt.Errorf("%s puts %d ranks on host %s, above its max_slots=%d", opt.perNodeFlag(), c, h.Name, h.MaxSlots)
		case c > h.Slots && !opt.Oversubscribe:
			return fmt.Errorf("%s puts %d ranks on host %s, which has %s; use --oversubscribe to allow it",
				opt.perNodeFlag(), c, h.Name, Slots(h.Slots))
		}
	}
	return nil
}

// mapBySlots places -np ranks by the --map-by policy. Ranks that fit in
// the slots are placed first; only the excess, allowed by
// --oversubscribe, goes round robin over nodes below their max_slots.
func mapBySlots(nodes []Host, opt Options) ([]int, error) {
	np, total := opt.NP, totalSlots(nodes)
	if np == 0 { // Open MPI's default: one rank per slot
		if total > MaxRanks {
			return nil, fmt.Errorf("one rank per slot on %s is more than the limit of %d ranks; give -np", hostNames(nodes), MaxRanks)
		}
		np = total
	}
	if err := checkCapacity(nodes, np, total, opt.Oversubscribe); err != nil {
		return nil, err
	}
	counts := make([]int, len(nodes))
	rankNode := make([]int, 0, np)
	switch {
	case opt.MapBy == MapByNode && np <= total:
		rankNode = roundRobin(rankNode, np, nodes, counts, slotLimit)
	case opt.MapBy == MapByNode:
		rankNode = roundRobin(rankNode, np, nodes, counts, hardLimit)
	default:
		rankNode = fillSlots(rankNode, np, nodes, counts)
		rankNode = roundRobin(rankNode, np, nodes, counts, hardLimit)
	}
	if len(rankNode) != np {
		return nil, fmt.Errorf("internal error: placed %d of %d ranks", len(rankNode), np)
	}
	return rankNode, nil
}

// checkCapacity reports whether np ranks fit. max_slots is checked first
// because --oversubscribe cannot lift it, so suggesting the flag would
// mislead.
func checkCapacity(nodes []Host, np, total int, oversubscribe bool) error {
	if np <= total {
		return nil
	}
	if limit, ok := hardCapacity(nodes); ok && np > limit {
		return fmt.Errorf("-np %d exceeds the %d ranks that max_slots allows on %s", np, limit, hostNames(nodes))
	}
	if !oversubscribe {
		return fmt.Errorf("-np %d exceeds the %s available; use --oversubscribe to allow it", np, Slots(total))
	}
	return nil
}

// Slots says "1 slot" or "n slots".
func Slots(n int) string { return count(n, "slot") }

// count says "1 thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// totalSlots sums the slots of nodes, saturating at MaxRanks+1: any larger
// total compares the same against an -np that is at most MaxRanks.
func totalSlots(nodes []Host) int {
	total := 0
	for _, h := range nodes {
		total = min(total+h.Slots, MaxRanks+1)
	}
	return total
}

// hardCapacity returns how many ranks max_slots allows in total; ok is
// false when some node has no limit.
func hardCapacity(nodes []Host) (limit int, ok bool) {
	for _, h := range nodes {
		if h.MaxSlots == 0 {
			return 0, false
		}
		limit = min(limit+h.MaxSlots, MaxRanks+1)
	}
	return limit, true
}

// hostNames lists nodes for an error message, eliding long lists.
func hostNames(nodes []Host) string {
	const shown = 4
	names := make([]string, 0, shown)
	for _, h := range nodes[:min(len(nodes), shown)] {
		names = append(names, h.Name)
	}
	s := strings.Join(names, ", ")
	if len(nodes) > shown {
		s += fmt.Sprintf(" and %d more", len(nodes)-shown)
	}
	if len(nodes) == 1 {
		return "host " + s
	}
	return "hosts " + s
}

// fillSlots places ranks node by node, each up to its slots.
func fillSlots(rankNode []int, np int, nodes []Host, counts []int) []int {
	for i, h := range nodes {
		for ; counts[i] < h.Slots && len(rankNode) < np; counts[i]++ {
			rankNode = append(rankNode, i)
		}
	}
	return rankNode
}

// slotLimit and hardLimit bound a node's ranks for roundRobin; 0 means no
// bound.
func slotLimit(h Host) int { return h.Slots }
func hardLimit(h Host) int { return h.MaxSlots }

// roundRobin places ranks one per node per pass, starting at node 0 and
// skipping nodes that reached their limit, until np ranks are placed or
// every node is full. It keeps a shrinking list of open nodes so that one
// big node among many small ones costs time linear in the ranks placed.
func roundRobin(rankNode []int, np int, nodes []Host, counts []int, limit func(Host) int) []int {
	open := make([]int, 0, len(nodes))
	for i, h := range nodes {
		if below(counts[i], limit(h)) {
			open = append(open, i)
		}
	}
	for len(rankNode) < np && len(open) > 0 {
		kept := open[:0]
		for _, i := range open {
			if len(rankNode) == np {
				break
			}
			rankNode = append(rankNode, i)
			counts[i]++
			if below(counts[i], limit(nodes[i])) {
				kept = append(kept, i)
			}
		}
		open = kept
	}
	return rankNode
}

// below reports whether count is under limit, where 0 means no limit.
func below(count, limit int) bool { return limit == 0 || count < limit }

// Size returns the number of ranks.
func (m *Map) Size() int { return len(m.RankNode) }

// RanksOn returns the ranks placed on node index node, ascending; nil if
// none or node is out of range.
func (m *Map) RanksOn(node int) []int {
	var ranks []int
	for r, n := range m.RankNode {
		if n == node {
			ranks = append(ranks, r)
		}
	}
	return ranks
}

// LocalRank returns the index of rank among RanksOn(its node), or -1 if
// rank is out of range. It scans the ranks below rank; use LocalRanks to
// get them all in one pass.
func (m *Map) LocalRank(rank int) int {
	if rank < 0 || rank >= len(m.RankNode) {
		return -1
	}
	node, local := m.RankNode[rank], 0
	for _, n := range m.RankNode[:rank] {
		if n == node {
			local++
		}
	}
	return local
}

// LocalRanks returns LocalRank of every rank, computed in one pass so that
// launching a large job stays linear.
func (m *Map) LocalRanks() []int {
	seen := make([]int, len(m.Nodes))
	local := make([]int, len(m.RankNode))
	for r, n := range m.RankNode {
		local[r] = seen[n]
		seen[n]++
	}
	return local
}

// Daemon returns the daemon id that launches rank: its node index plus
// one, since daemon 0 is mpirun itself.
func (m *Map) Daemon(rank int) int { return m.RankNode[rank] + 1 }

// MoveFirst returns a copy of m in which node comes first and the others
// keep their order; every rank stays on its host. newIndex[i] is where
// m's node i went.
func (m *Map) MoveFirst(node int) (moved *Map, newIndex []int) {
	newIndex = make([]int, len(m.Nodes))
	for i := range m.Nodes {
		switch {
		case i == node:
			newIndex[i] = 0
		case i < node:
			newIndex[i] = i + 1
		default:
			newIndex[i] = i
		}
	}
	moved = &Map{Nodes: make([]Host, len(m.Nodes)), RankNode: make([]int, len(m.RankNode))}
	for i, h := range m.Nodes {
		moved.Nodes[newIndex[i]] = h
	}
	for r, n := range m.RankNode {
		moved.RankNode[r] = newIndex[n]
	}
	return moved, newIndex
}

// WithRanks returns m without the nodes that hold no rank, which it
// returns as idle, in order; every rank stays on its host.
func (m *Map) WithRanks() (used *Map, idle []Host) {
	holds := make([]bool, len(m.Nodes))
	for _, n := range m.RankNode {
		holds[n] = true
	}
	newIndex := make([]int, len(m.Nodes))
	used = &Map{RankNode: make([]int, len(m.RankNode))}
	for i, h := range m.Nodes {
		if !holds[i] {
			idle = append(idle, h)
			continue
		}
		newIndex[i] = len(used.Nodes)
		used.Nodes = append(used.Nodes, h)
	}
	for r, n := range m.RankNode {
		used.RankNode[r] = newIndex[n]
	}
	return used, idle
}
