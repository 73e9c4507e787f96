package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"prsh/job"
	"prsh/job/binding"
	"prsh/job/compat"
)

// options are the placement flags as job.Build takes them, used for the
// first map and again when nodes are left out; np is the job's rank
// count, 0 for the default.
func options(req Request, np int) (job.Options, error) {
	if req.NPSet && req.NP <= 0 {
		return job.Options{}, fmt.Errorf("-np must be at least 1, not %d", req.NP)
	}
	p := req.Placement
	perNode := p.NPerNode
	m, err := mapBy(p)
	if err != nil {
		return job.Options{}, err
	}
	bind, err := bindPolicy(p, np) // the cores per rank may come from --bind-to core:N
	if err != nil {
		return job.Options{}, err
	}
	policy := m.policy
	if _, ok := spreadUnits[strings.ToLower(policy)]; ok { // over the nodes by slot; bindPolicy spreads them over the units
		policy = "slot"
	}
	mapByPolicy, ppr, err := job.ParseMapping(policy)
	switch {
	case err != nil:
		return job.Options{}, err
	case ppr > 0 && perNode > 0 && ppr != perNode:
		return job.Options{}, fmt.Errorf("--map-by ppr:%d:node and -npernode %d disagree", ppr, perNode)
	}
	flag := ""
	if ppr > 0 {
		perNode, flag = ppr, "--map-by "+m.policy
	}
	return job.Options{
		NP: np, NPerNode: perNode, PerNodeFlag: flag, MapBy: mapByPolicy, Oversubscribe: p.Oversubscribe || m.oversubscribe, PE: bind.PE,
	}, nil
}

// bindPolicy reads --bind-to UNIT[:overload-allowed], --map-by
// socket|numa|l3cache, the cores per rank (PE) and --report-bindings for
// a job of np ranks.
// Without --map-by, bound ranks are spread as Open MPI spreads them:
// over the cores for np ≤ 2, round robin over the sockets otherwise.
// Ranks of several cores are bound to cores; a --bind-to that says
// otherwise is an error.
func bindPolicy(req Placement, np int) (binding.Policy, error) {
	value, err := compat.OlderSpelling("bind-to", req.BindTo, req.BindToSet, compat.OlderBindTo, req.Older)
	if err != nil {
		return binding.Policy{}, err
	}
	unit, qualifiers, _ := strings.Cut(value, ":")
	mapping, err := mapBy(req)
	if err != nil {
		return binding.Policy{}, err
	}
	p := binding.Policy{Report: req.ReportBindings, PE: mapping.pe}
	peFrom := mapping.peFrom
	for _, q := range strings.Split(qualifiers, ",") {
		switch n, err := strconv.Atoi(q); {
		case q == "", q == "if-supported":
		case q == "overload-allowed":
			p.Overload = true
		case err == nil && n >= 1: // Hydra's -bind-to core:N
			if peFrom != "" && n != p.PE {
				return p, fmt.Errorf("--bind-to %q and %s disagree on the cores per rank", value, peFrom)
			}
			p.PE, peFrom = n, "--bind-to "+value
		default:
			return p, fmt.Errorf("--bind-to %q: unknown qualifier %q (want overload-allowed, if-supported or a count of cores per rank)", value, q)
		}
	}
	unit = strings.ToLower(unit)
	if p.PE > 1 {
		if unit != "" && unit != "core" {
			return p, fmt.Errorf("%s binds each rank to %d cores: use --bind-to core, or leave --bind-to out", peFrom, p.PE)
		}
		unit = "core"
	}
	switch {
	case unit == "" || unit == "none":
		return p, nil
	case unit == "package":
		p.Unit = binding.Socket
	case slices.Contains(binding.Units, binding.Unit(unit)):
		p.Unit = binding.Unit(unit)
	default:
		return p, fmt.Errorf("--bind-to %q: want none, hwthread, core, l3cache, numa, socket or board (with :overload-allowed to let ranks share)", value)
	}
	switch {
	case req.MapBySet:
		p.Spread = spreadUnits[strings.ToLower(mapping.policy)]
	case np > 2:
		p.Spread = binding.Socket
	}
	return p, nil
}

// spreadUnits are the --map-by policies that place ranks as slot does
// over the nodes, and deal each node's ranks round robin over its units
// of that kind when they are bound.
var spreadUnits = map[string]binding.Unit{"socket": binding.Socket, "numa": binding.NUMA, "l3cache": binding.L3}

// mapping is --map-by read: the policy, and the cores per rank from its
// PE=N modifier or --cpus-per-rank, named as the user gave it in peFrom.
type mapping struct {
	policy        string // slot, node, core, hwthread, socket, numa, l3cache or ppr:N:node
	pe            int    // 1 unless set
	peFrom        string
	oversubscribe bool // the OVERSUBSCRIBE modifier
}

// mapBy reads --map-by POLICY[:MODIFIER...] as Open MPI 4 writes it, with
// the modifiers PE=N (each rank takes N slots and is bound to N cores),
// OVERSUBSCRIBE and NOOVERSUBSCRIBE, and --cpus-per-rank N.
func mapBy(req Placement) (mapping, error) {
	m := mapping{pe: 1}
	value, err := compat.OlderSpelling("map-by", req.MapBy, req.MapBySet, compat.OlderMapBy, req.Older)
	if err != nil {
		return m, err
	}
	var policy []string
	for _, part := range strings.Split(value, ":") {
		key, n, isPE := strings.Cut(part, "=")
		switch {
		case isPE && strings.EqualFold(key, "pe"):
			pe, err := strconv.Atoi(n)
			if err != nil || pe < 1 {
				return m, fmt.Errorf("--map-by %q: PE=%s: want a count of cores of at least 1", value, n)
			}
			m.pe, m.peFrom = pe, "--map-by "+value
		case strings.EqualFold(part, "oversubscribe"):
			m.oversubscribe = true
		case strings.EqualFold(part, "nooversubscribe"):
		default:
			policy = append(policy, part)
		}
	}
	m.policy = strings.Join(policy, ":")
	if req.CPUsPerRankSet {
		n := req.CPUsPerRank
		switch {
		case n < 1:
			return m, fmt.Errorf("--cpus-per-rank %d: want a count of cores of at least 1", n)
		case m.peFrom != "" && n != m.pe:
			return m, fmt.Errorf("--cpus-per-rank %d and %s disagree on the cores per rank", n, m.peFrom)
		}
		m.pe, m.peFrom = n, fmt.Sprintf("--cpus-per-rank %d", n)
	}
	return m, nil
}

// placeRanks places np ranks (0: one per slot), the sum of the -np of
// several programs, on the hosts of src.
func placeRanks(req Request, src hostSource, np, programs int) (*job.Map, error) {
	opt, err := options(req, np)
	if err != nil {
		return nil, err
	}
	m, err := job.Build(src.hosts, opt)
	if err != nil && programs > 1 {
		err = fmt.Errorf("the -np of the %d programs add up to %d: %w", programs, np, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, src.from)
	}
	return m, nil
}

// remapper places the ranks again on the nodes that came up, with the
// same options and in the user's order of hosts (m's); a default -np
// shrinks with the nodes. daemonIndex[i] is where m's node i stands in
// the daemons' order (daemonOf makes it an id; own: mpirun is node 0's).
func remapper(req Request, m *job.Map, daemonIndex []int, np int, own bool) func(skipped map[int]bool) ([]int, error) {
	return func(skipped map[int]bool) ([]int, error) {
		var hosts []job.Host
		var ids []int
		for i, h := range m.Nodes {
			if id := daemonOf(daemonIndex[i], own); !skipped[id] {
				hosts = append(hosts, h)
				ids = append(ids, id)
			}
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("no node could be reached")
		}
		opt, _ := options(req, np) // checked when the first map was built
		survivors, err := job.Build(hosts, opt)
		if err != nil {
			return nil, fmt.Errorf("placing the ranks on the %d nodes that came up: %w", len(hosts), err)
		}
		rankNode := make([]int, survivors.Size())
		for r, node := range survivors.RankNode {
			rankNode[r] = ids[node]
		}
		return rankNode, nil
	}
}

// localFirst makes this host's node, when a host list of several names
// it, the first: mpirun's own (ownNode), or else daemon 1, a direct child
// of mpirun in every spawn tree, which mpirun forks instead of reaching
// it over ssh (an orted elsewhere could not start it: "localhost" there
// is another machine). The ranks stay where
// they were placed; daemonIndex[i] is where m's node i went.
func localFirst(m *job.Map, self string) (moved *job.Map, daemonIndex []int, err error) {
	var local []int
	for i, h := range m.Nodes {
		if isLocal(h.Name, self) {
			local = append(local, i)
		}
	}
	switch {
	case len(m.Nodes) == 1 || len(local) == 0:
		return m, identity(len(m.Nodes)), nil
	case len(local) > 1:
		return nil, nil, fmt.Errorf("the hosts %s and %s are both this host: name it once", m.Nodes[local[0]].Name, m.Nodes[local[1]].Name)
	}
	moved, daemonIndex = m.MoveFirst(local[0])
	return moved, daemonIndex, nil
}

func identity(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// isLocal says whether host names this host, called self.
func isLocal(host, self string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == self
}
