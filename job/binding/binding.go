// Package binding computes which CPUs each of a node's ranks is bound to
// (mpirun --bind-to, --map-by socket), from the node's own CPUs. It is
// pure: the daemon reads the CPUs (sched_getaffinity, sysfs) and applies
// the result (sched_setaffinity); this package only decides.
package binding

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Unit is what a rank is bound to.
type Unit string

const (
	None     Unit = ""         // unbound: the rank gets every CPU its daemon has
	HWThread Unit = "hwthread" // one hardware thread (logical CPU)
	Core     Unit = "core"     // the hardware threads of one core
	L3       Unit = "l3cache"  // every CPU that shares one L3 cache
	NUMA     Unit = "numa"     // every CPU of one NUMA node
	Socket   Unit = "socket"   // every CPU of one socket (package)
	Board    Unit = "board"    // every CPU the daemon has, bound explicitly
)

// Units are the units a rank can be bound to, smallest first.
var Units = []Unit{HWThread, Core, L3, NUMA, Socket, Board}

// Policy is how a node's ranks are placed on its CPUs. The zero value
// leaves them unbound.
type Policy struct {
	Unit Unit `json:",omitempty"`
	// Spread deals the ranks round robin over the units of this kind
	// (Socket, NUMA or L3: --map-by socket, numa, l3cache), rank i in
	// unit i mod U; "" fills the cores in order, socket by socket.
	Spread Unit `json:",omitempty"`
	// Overload lets more ranks than cores share them (core:overload-allowed);
	// otherwise that is an error.
	Overload bool `json:",omitempty"`
	Report   bool `json:",omitempty"` // --report-bindings
	// PE is the cores each rank is bound to (Open MPI's --map-by
	// slot:PE=N, for ranks that run threads), all of one socket; 0 or 1:
	// one. Only with Unit Core.
	PE int `json:",omitempty"`
}

// CPU is one logical CPU the node lets the job use, with the core and
// socket it belongs to (sysfs core_id and physical_package_id), its NUMA
// node and its L3 cache (-1: unknown, which fails a binding to it).
type CPU struct{ ID, Core, Socket, NUMA, L3 int }

// Binding is one local rank's place: its first core (the index among
// the node's usable cores, in socket order), how many cores it has, its
// socket, the NUMA node or L3 cache it is bound to (for those units),
// and the CPUs it may run on. CPUs is nil when the rank is unbound.
type Binding struct {
	Unit                        Unit
	Core, Cores, Socket, Domain int
	CPUs                        []int
}

// socket is one socket's usable cores, each a sorted list of CPU ids.
type socket struct {
	id    int
	cores [][]int
}

// Bind places ranks local ranks on cpus by p. It fails when a rank would
// share a core (or hardware thread) with another and p does not allow
// overload. A rank bound to a bigger unit than a core is bound to the
// one that holds the core it would have been bound to, so that ranks
// spread over the units as they spread over the cores.
func Bind(cpus []CPU, ranks int, p Policy) ([]Binding, error) {
	out := make([]Binding, ranks)
	if p.Unit == None || ranks == 0 {
		return out, nil
	}
	pe := max(p.PE, 1)
	switch {
	case !slices.Contains(Units, p.Unit):
		return nil, fmt.Errorf("cannot bind to %q (want %s or none)", p.Unit, unitNames())
	case pe > 1 && p.Unit != Core:
		return nil, fmt.Errorf("PE=%d binds each rank to %d cores, not to a %s", pe, pe, p.Unit)
	}
	sockets := group(cpus)
	if len(sockets) == 0 {
		return nil, fmt.Errorf("no CPU to bind to")
	}
	spread, err := spreadKey(sockets, cpus, p.Spread)
	if err != nil {
		return nil, err
	}
	if p.Unit == HWThread {
		return bindThreads(sockets, ranks, p, spread)
	}
	domain, err := domainOf(cpus, p.Unit)
	if err != nil {
		return nil, err
	}
	order := blockOrder(sockets, pe, spread)
	if ranks > len(order) && !p.Overload {
		return nil, overloadError(sockets, ranks, p)
	}
	for i := range out {
		at := order[i%len(order)] // beyond the cores (overload allowed) start over
		s, k := at[0], at[1]
		sock := sockets[s]
		out[i] = Binding{Unit: p.Unit, Core: coreIndex(sockets, s, k), Cores: pe, Socket: sock.id,
			CPUs: slices.Sorted(slices.Values(slices.Concat(sock.cores[k : k+pe]...)))}
		if p.Unit != Core {
			out[i].Domain = domain[sock.cores[k][0]]
			out[i].CPUs = sameDomain(cpus, domain, out[i].Domain)
		}
	}
	return out, nil
}

// domainOf maps each CPU to the unit of its kind that holds it.
func domainOf(cpus []CPU, unit Unit) (map[int]int, error) {
	domain := make(map[int]int, len(cpus))
	for _, c := range cpus {
		switch unit {
		case Socket:
			domain[c.ID] = c.Socket
		case NUMA:
			domain[c.ID] = c.NUMA
		case L3:
			if c.L3 < 0 {
				return nil, fmt.Errorf("cannot bind to an L3 cache: sysfs gives none for cpu %d", c.ID)
			}
			domain[c.ID] = c.L3
		}
	}
	return domain, nil
}

// sameDomain lists, sorted, the CPUs in domain d.
func sameDomain(cpus []CPU, domain map[int]int, d int) []int {
	var ids []int
	for _, c := range cpus {
		if domain[c.ID] == d {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// bindThreads binds each rank to one hardware thread: the first thread
// of each core in the cores' order, then the second thread of each, and
// so on, so that ranks share a core only once every core has one.
func bindThreads(sockets []socket, ranks int, p Policy, spread func(s, k int) int) ([]Binding, error) {
	order := blockOrder(sockets, 1, spread)
	var threads []Binding
	for t := 0; ; t++ {
		added := false
		for _, at := range order {
			sock := sockets[at[0]]
			if core := sock.cores[at[1]]; t < len(core) {
				threads = append(threads, Binding{Unit: HWThread, Core: coreIndex(sockets, at[0], at[1]), Cores: 1,
					Socket: sock.id, CPUs: []int{core[t]}})
				added = true
			}
		}
		if !added {
			break
		}
	}
	if ranks > len(threads) && !p.Overload {
		return nil, fmt.Errorf("%d ranks but %d hardware threads to bind them to (--bind-to hwthread); --bind-to hwthread:overload-allowed lets them share, --bind-to none leaves them unbound",
			ranks, len(threads))
	}
	out := make([]Binding, ranks)
	for i := range out {
		out[i] = threads[i%len(threads)]
	}
	return out, nil
}

// unitNames lists the units for a message: "hwthread, core, …".
func unitNames() string {
	names := make([]string, len(Units))
	for i, u := range Units {
		names[i] = string(u)
	}
	return strings.Join(names, ", ")
}

// overloadError says that ranks do not fit on the node's cores, and how
// to let them share.
func overloadError(sockets []socket, ranks int, p Policy) error {
	if p.PE > 1 {
		cores := 0
		for _, s := range sockets {
			cores += len(s.cores)
		}
		return fmt.Errorf("%d ranks of %d cores each do not fit on the %d cores here (a rank's cores are all on one socket); --bind-to core:overload-allowed lets them share",
			ranks, p.PE, cores)
	}
	return fmt.Errorf("%d ranks but %d cores to bind them to (--bind-to %s); --bind-to %s:overload-allowed lets them share, --bind-to none leaves them unbound",
		ranks, len(blockOrder(sockets, 1, nil)), p.Unit, p.Unit)
}

// blockOrder lists the blocks of pe cores (socket index, index of the
// block's first core in it) in the order the ranks take them: socket by
// socket, or, given spread, round robin over the units that spread puts
// the blocks in (in the order the units first appear), skipping a unit
// whose blocks are all taken. A socket's cores beyond its last whole
// block are left out.
func blockOrder(sockets []socket, pe int, spread func(s, k int) int) [][2]int {
	var fill [][2]int
	for s, sock := range sockets {
		for k := 0; k+pe <= len(sock.cores); k += pe {
			fill = append(fill, [2]int{s, k})
		}
	}
	if spread == nil {
		return fill
	}
	var units [][][2]int
	index := map[int]int{}
	for _, b := range fill {
		u := spread(b[0], b[1])
		i, ok := index[u]
		if !ok {
			i, index[u] = len(units), len(units)
			units = append(units, nil)
		}
		units[i] = append(units[i], b)
	}
	order := make([][2]int, 0, len(fill))
	for round := 0; len(order) < len(fill); round++ {
		for _, blocks := range units {
			if round < len(blocks) {
				order = append(order, blocks[round])
			}
		}
	}
	return order
}

// spreadKey is the unit of kind spread that holds the core (socket s,
// core k), for blockOrder; nil when the ranks fill the cores in order.
func spreadKey(sockets []socket, cpus []CPU, spread Unit) (func(s, k int) int, error) {
	switch spread {
	case "":
		return nil, nil
	case Socket:
		return func(s, _ int) int { return s }, nil
	case NUMA, L3:
		domain, err := domainOf(cpus, spread)
		if err != nil {
			return nil, err
		}
		return func(s, k int) int { return domain[sockets[s].cores[k][0]] }, nil
	}
	return nil, fmt.Errorf("cannot spread ranks over %q (want socket, numa or l3cache)", spread)
}

// coreIndex is core k of socket s counted over the whole node.
func coreIndex(sockets []socket, s, k int) int {
	for _, before := range sockets[:s] {
		k += len(before.cores)
	}
	return k
}

// group sorts the CPUs into sockets and cores: the hardware threads of a
// core belong together, sockets and cores in the order of their ids.
func group(cpus []CPU) []socket {
	type key struct{ socket, core int }
	byCore := map[key][]int{}
	for _, c := range cpus {
		k := key{c.Socket, c.Core}
		byCore[k] = append(byCore[k], c.ID)
	}
	keys := make([]key, 0, len(byCore))
	for k := range byCore {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.socket, b.socket), cmp.Compare(a.core, b.core))
	})
	var sockets []socket
	for _, k := range keys {
		if len(sockets) == 0 || sockets[len(sockets)-1].id != k.socket {
			sockets = append(sockets, socket{id: k.socket})
		}
		ids := byCore[k]
		slices.Sort(ids)
		last := &sockets[len(sockets)-1]
		last.cores = append(last.cores, ids)
	}
	return sockets
}

// String says where the rank runs, for --report-bindings: "core 1 of
// socket 0 (cpus 2,3)", "cores 2-3 of socket 0 (cpus 2-3)", "NUMA node
// 1 (cpus 4-7)", … or "nothing (unbound)".
func (b Binding) String() string {
	switch {
	case b.Unit == Core && b.Cores > 1:
		return fmt.Sprintf("cores %d-%d of socket %d (cpus %s)", b.Core, b.Core+b.Cores-1, b.Socket, List(b.CPUs))
	case b.Unit == Core:
		return fmt.Sprintf("core %d of socket %d (cpus %s)", b.Core, b.Socket, List(b.CPUs))
	case b.Unit == HWThread:
		return fmt.Sprintf("a hardware thread of core %d of socket %d (cpu %s)", b.Core, b.Socket, List(b.CPUs))
	case b.Unit == L3:
		return fmt.Sprintf("L3 cache %d (cpus %s)", b.Domain, List(b.CPUs))
	case b.Unit == NUMA:
		return fmt.Sprintf("NUMA node %d (cpus %s)", b.Domain, List(b.CPUs))
	case b.Unit == Board:
		return fmt.Sprintf("the board (cpus %s)", List(b.CPUs))
	case b.Unit == Socket:
		return fmt.Sprintf("socket %d (cpus %s)", b.Socket, List(b.CPUs))
	}
	return "nothing (unbound)"
}

// List writes sorted CPU ids as the kernel's cpu lists do: "0-3,8,10-11".
func List(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		part := strconv.Itoa(ids[i])
		if j > i {
			part += "-" + strconv.Itoa(ids[j])
		}
		parts = append(parts, part)
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// ParseList reads a kernel cpu list ("0-3,8,10-11").
func ParseList(s string) ([]int, error) {
	var ids []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || b < a || a < 0 {
			return nil, fmt.Errorf("bad cpu list %q", s)
		}
		for id := a; id <= b; id++ {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Within keeps the CPUs that are also in allowed (a cgroup's cpuset), so
// that no rank is bound outside what the batch system gave the job. A nil
// allowed, or one that shares no CPU with cpus (a cpuset read from the
// wrong cgroup, as seen from another namespace), keeps them all: the
// affinity mask they came from is the kernel's own answer.
func Within(cpus []CPU, allowed []int) []CPU {
	var kept []CPU
	for _, c := range cpus {
		if slices.Contains(allowed, c.ID) {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return cpus
	}
	return kept
}

// IDs lists the CPUs' ids, sorted.
func IDs(cpus []CPU) []int {
	ids := make([]int, len(cpus))
	for i, c := range cpus {
		ids[i] = c.ID
	}
	slices.Sort(ids)
	return ids
}
