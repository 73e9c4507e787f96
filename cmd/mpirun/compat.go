package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"prsh/job"
	"prsh/job/binding"
)

// Flags from Open MPI's command line that prsh accepts without doing what
// Open MPI would: each says so in one line, or is refused when its value
// is not one Open MPI knows.

// peerFlags are flags of Open MPI and Hydra that prsh does not have, and
// what to do instead.
var peerFlags = map[string]string{
	"prefix":        "Open MPI's --prefix: put mpirun and orted at the same path on every node, or give --orted PATH",
	"rankfile":      "Open MPI's --rankfile: not supported; use -H with slots, --map-by or -npernode",
	"configfile":    "Hydra's -configfile: use --app FILE (one program per line), or separate the programs by ':'",
	"iface":         "Hydra's -iface: give mpirun's address with --listen-ip",
	"bind":          "--bind was renamed --listen-ip (the address mpirun listens on); to bind ranks Open MPI uses --bind-to",
	"launcher":      "Hydra's -launcher: use --launch-agent 'CMD %h'",
	"am":            "Open MPI's -am: give the file's parameters with --mca KEY VALUE",
	"debug-daemons": "Open MPI's --debug-daemons: -v (--log-level debug) shows the daemons' logs",
	"npersocket":    "Open MPI's -npersocket: use --map-by socket with -npernode, or --map-by ppr:N:node",
	"tune":          "Open MPI's --tune: give the file's parameters with --mca KEY VALUE, its variables with -x",
	"bootstrap":     "Hydra's -bootstrap: use --launch-agent 'CMD %h'",
}

// explainFlagError rewords the flag library's "flag provided but not
// defined: -name" with both dashes, and says what to use instead: the
// peers' flag prsh lacks, or the nearest flag it has.
func explainFlagError(err error, flags []cli.Flag) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	flag := "--" + name
	if len(name) == 1 {
		flag = "-" + name
	}
	if hint, ok := peerFlags[name]; ok {
		return fmt.Errorf("unknown flag %s: %s", flag, hint)
	}
	if cli.SuggestFlag != nil {
		if s := cli.SuggestFlag(flags, name, true); s != "" {
			return fmt.Errorf("unknown flag %s; did you mean %s?", flag, s)
		}
	}
	return fmt.Errorf("unknown flag %s", flag)
}

// checkPeerFlags checks --bind-to.
func checkPeerFlags(c *cli.Context) error {
	_, err := bindPolicy(c, 1)
	return err
}

// mcaEnv turns each -gmca and --mca KEY VALUE into OMPI_MCA_KEY=VALUE
// for the ranks, as Open MPI's mpirun passes its MCA parameters to its
// ranks (--mca after -gmca, so that it wins). A parameter of Open MPI's
// own launcher, which prsh replaces, is passed too, and warned about
// with what to use instead.
func mcaEnv(c *cli.Context) ([]string, error) {
	var env []string
	for _, flag := range []string{"-gmca", "--mca"} {
		for _, kv := range rawValues(c, strings.TrimLeft(flag, "-")) {
			key, value, _ := strings.Cut(kv, "=")
			v, err := mcaVar(flag, key, value)
			if err != nil {
				return nil, err
			}
			if hint := launcherParam(key); hint != "" {
				warn("%s %s is a parameter of Open MPI's own launcher, which prsh replaces: %s", flag, key, hint)
			}
			env = append(env, v)
		}
	}
	return env, nil
}

// mcaVar is the variable through which Open MPI reads parameter key.
func mcaVar(flag, key, value string) (string, error) {
	if key == "" || strings.TrimFunc(key, isParamChar) != "" {
		return "", fmt.Errorf("%s %q %q: want %s KEY VALUE, KEY of letters, digits and '_'", flag, key, value, flag)
	}
	return "OMPI_MCA_" + key + "=" + value, nil
}

func isParamChar(r rune) bool {
	return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}

// launcherHints are the parameters of Open MPI's launcher that users
// set most, and the flag of prsh's that does their work.
var launcherHints = map[string]string{
	"plm_rsh_agent":              "use --launch-agent 'CMD %h'",
	"plm_rsh_args":               "use --launch-agent 'ssh ARGS %h', or --ssh-config",
	"plm_rsh_num_concurrent":     "use --ssh-max-sessions",
	"orte_launch_agent":          "use --orted PATH",
	"rmaps_base_oversubscribe":   "use --oversubscribe",
	"rmaps_base_mapping_policy":  "use --map-by",
	"hwloc_base_binding_policy":  "use --bind-to",
	"routed":                     "use --routed",
	"routed_radix":               "use --routed-radix",
	"orte_tag_output":            "use --tag-output",
	"orte_timestamp_output":      "use --timestamp-output",
	"oob_tcp_dynamic_ipv4_ports": "use --port-range",
	"oob_tcp_static_ipv4_ports":  "use --port-range",
}

// launcherParam says what to do instead of setting key, a parameter of
// Open MPI's launcher; "" for any other parameter.
func launcherParam(key string) string {
	if hint, ok := launcherHints[key]; ok {
		return hint
	}
	for _, prefix := range []string{"plm_", "ras_", "rmaps_", "odls_", "orte_"} {
		if strings.HasPrefix(key, prefix) {
			return "prsh does not read it (the ranks still get it)"
		}
	}
	return ""
}

// bindPolicy reads --bind-to UNIT[:overload-allowed], --map-by
// socket|numa|l3cache, the cores per rank (PE) and --report-bindings for
// a job of np ranks.
// Without --map-by, bound ranks are spread as Open MPI spreads them:
// over the cores for np ≤ 2, round robin over the sockets otherwise.
// Ranks of several cores are bound to cores; a --bind-to that says
// otherwise is an error.
func bindPolicy(c *cli.Context, np int) (binding.Policy, error) {
	value, err := olderSpelling(c, "bind-to", map[string]string{"bind-to-core": "core", "bind-to-socket": "socket"})
	if err != nil {
		return binding.Policy{}, err
	}
	unit, qualifiers, _ := strings.Cut(value, ":")
	mapping, err := mapBy(c)
	if err != nil {
		return binding.Policy{}, err
	}
	p := binding.Policy{Report: c.Bool("report-bindings"), PE: mapping.pe}
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
	case c.IsSet("map-by"):
		p.Spread = spreadUnits[strings.ToLower(mapping.policy)]
	case np > 2:
		p.Spread = binding.Socket
	}
	return p, nil
}

// olderSpelling is the value of flag, or of the one of olders (Open
// MPI's older switches, each standing for a value of flag) that is set;
// two that name different units are an error.
func olderSpelling(c *cli.Context, flag string, olders map[string]string) (string, error) {
	value, from := c.String(flag), ""
	if c.IsSet(flag) {
		from = "--" + flag + " " + value
	}
	for _, older := range slices.Sorted(maps.Keys(olders)) {
		if !c.Bool(older) {
			continue
		}
		if unit, _, _ := strings.Cut(value, ":"); from != "" && !strings.EqualFold(unit, olders[older]) {
			return "", fmt.Errorf("--%s and %s contradict each other", older, from)
		}
		if from == "" { // an agreeing flag keeps its modifiers (core:overload-allowed)
			value, from = olders[older], "--"+older
		}
	}
	return value, nil
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
func mapBy(c *cli.Context) (mapping, error) {
	m := mapping{pe: 1}
	value, err := olderSpelling(c, "map-by", map[string]string{"bynode": "node", "byslot": "slot"})
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
	if c.IsSet("cpus-per-rank") {
		n := c.Int("cpus-per-rank")
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

// displayAllocation prints the hosts and slots mpirun found, and where
// from (--display-allocation).
func displayAllocation(w io.Writer, src hostSource) {
	fmt.Fprintf(w, "mpirun: allocation (%s):\n", src.from)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, h := range src.hosts {
		limit := ""
		if h.MaxSlots > 0 {
			limit = "\tmax_slots=" + strconv.Itoa(h.MaxSlots)
		}
		fmt.Fprintf(tw, "    %s\tslots=%d%s\n", h.Name, h.Slots, limit)
	}
	tw.Flush()
}

// displayMap prints which ranks each node runs, and the program of each
// rank when there are several (--display-map).
func displayMap(w io.Writer, m *job.Map, contexts []appContext) {
	fmt.Fprintf(w, "mpirun: map: %s on %s\n", count(m.Size(), "rank"), count(len(m.Nodes), "node"))
	programs := programOfRanks(contexts, m.Size())
	byNode := make([][]int, len(m.Nodes))
	for r, node := range m.RankNode {
		byNode[node] = append(byNode[node], r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, h := range m.Nodes {
		fmt.Fprintf(tw, "    %s\tranks %s%s\n", h.Name, rankRanges(byNode[i]), programsOf(byNode[i], programs))
	}
	tw.Flush()
}

// programOfRanks numbers each rank's program (0 = the first).
func programOfRanks(contexts []appContext, size int) []int {
	program := make([]int, size)
	first := 0
	for i, ctx := range contexts {
		for r := first; r < first+ctx.np && r < size; r++ {
			program[r] = i
		}
		first += ctx.np
	}
	return program
}

// programsOf names the programs of ranks, when the job has several.
func programsOf(ranks []int, program []int) string {
	var names []string
	seen := map[int]bool{}
	for _, r := range ranks {
		if p := program[r]; !seen[p] {
			seen[p] = true
			names = append(names, "program "+strconv.Itoa(p+1))
		}
	}
	if len(seen) == 1 && program[len(program)-1] == 0 {
		return "" // one program in the whole job
	}
	return "\t" + strings.Join(names, ", ")
}

// rankRanges writes ascending ranks compactly: 0-3,8,10-11.
func rankRanges(ranks []int) string {
	if len(ranks) == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ranks[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// count says "1 rank" or "n ranks".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
