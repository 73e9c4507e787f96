package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"prsh/daemon"
	"prsh/daemon/protocol"
	"prsh/internal/tcp"
	"prsh/job"
	"prsh/modex/pmix/need"
	"prsh/routed"
	"prsh/spawn"
	"prsh/spawn/launch"
	"prsh/stage"
	"prsh/topo"
	"prsh/transport"
)

// configure turns the command line into mpirun's daemon configuration.
func configure(c *cli.Context) (daemon.Config, error) {
	if err := checkPeerFlags(c); err != nil {
		return daemon.Config{}, usageError{err}
	}
	contexts, err := programs(c)
	if err != nil {
		return daemon.Config{}, usageError{err}
	}
	status := progressLine(c)
	stderr := stderrOf(status)
	log := logger(c, stderr)
	np := totalRanks(contexts)
	placed, err := jobMap(c, np, len(contexts), log)
	if err != nil {
		return daemon.Config{}, err
	}
	if c.Bool("display-map") {
		displayMap(os.Stderr, placed, contexts)
	}
	jobMap, daemonIndex, err := localFirst(placed)
	if err != nil {
		return daemon.Config{}, usageError{err}
	}
	spec, err := jobSpec(c, jobMap)
	if err != nil {
		return daemon.Config{}, err
	}
	if c.String("spawn-degree") == "auto" {
		log.Info("spawn degree auto", "chose", spec.SpawnDegree, "nodes", len(jobMap.Nodes),
			"hop", c.Duration("spawn-hop-hint"), "cost", c.Duration("spawn-cost-hint"))
	}
	agent, err := agent(c, jobMap, spec, log)
	if err != nil {
		return daemon.Config{}, err
	}
	secret, err := transport.NewSecret()
	if err != nil {
		return daemon.Config{}, err
	}
	app, err := application(c, jobMap, contexts)
	if err != nil {
		return daemon.Config{}, err
	}
	if spec.Stage, err = stagePlan(c, spec.Hosts[0], app); err != nil {
		return daemon.Config{}, err
	}
	limit, err := timeout(c.String("timeout"))
	if err != nil {
		return daemon.Config{}, usageError{err}
	}
	ports, err := tcp.ParsePorts(c.String("port-range"))
	if err != nil {
		return daemon.Config{}, usageError{fmt.Errorf("--port-range: %w", err)}
	}
	spec.PortRange = ports.String()
	if spec.NoPMIx, err = noPMIx(c.String("pmix"), app, log); err != nil {
		return daemon.Config{}, usageError{err}
	}
	if !spec.NoPMIx && c.String("orted") == "" {
		spec.OrtedPath = withPMIx(spec.OrtedPath)
	}
	return daemon.Config{
		ID: 0, Node: spec.Hosts[0], Secret: secret, Log: log,
		Bind: bindIP(c, agent, jobMap), Ports: ports, Job: spec, Nodes: nodes(jobMap), App: app, Agent: agent,
		Stdout: os.Stdout, Stderr: stderr, Status: status, ReportTimes: c.Bool("report-launch-times"),
		Output: outputOptions(c), Stdin: stdinSource(app.StdinRank), Timeout: limit,
		Remap: remapper(c, placed, daemonIndex, np),
	}, nil
}

func onUnreachable(value string) (skip bool, err error) {
	switch value {
	case "abort":
		return false, nil
	case "skip":
		return true, nil
	}
	return false, fmt.Errorf("--on-unreachable %q: want abort or skip", value)
}

// remapper places the ranks again on the nodes that came up, with the
// same options and in the user's order of hosts (m's); a default -np
// shrinks with the nodes. daemonIndex[i] is the daemon id of m's node
// i, less one.
func remapper(c *cli.Context, m *job.Map, daemonIndex []int, np int) func(skipped map[int]bool) ([]int, error) {
	return func(skipped map[int]bool) ([]int, error) {
		var hosts []job.Host
		var ids []int
		for i, h := range m.Nodes {
			if id := daemonIndex[i] + 1; !skipped[id] {
				hosts = append(hosts, h)
				ids = append(ids, id)
			}
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("no node could be reached")
		}
		opt, _ := jobOptions(c, np) // checked when the first map was built
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

// jobMap places np ranks (0: one per slot), the sum of the -np of
// several programs.
func jobMap(c *cli.Context, np, programs int, log hclog.Logger) (*job.Map, error) {
	src, err := hostList(c)
	if err != nil {
		return nil, usageError{err}
	}
	log.Debug("hosts", "from", src.from, "nodes", len(src.hosts))
	if c.Bool("display-allocation") {
		displayAllocation(os.Stderr, src)
	}
	opt, err := jobOptions(c, np)
	if err != nil {
		return nil, usageError{err}
	}
	m, err := job.Build(src.hosts, opt)
	if err != nil && programs > 1 {
		err = fmt.Errorf("the -np of the %d programs add up to %d: %w", programs, np, err)
	}
	if err != nil {
		return nil, usageError{fmt.Errorf("%w (%s)", err, src.from)}
	}
	return m, nil
}

// localFirst makes this host's node, when a host list of several names
// it, daemon 1: a direct child of mpirun in every spawn tree, which mpirun
// forks instead of reaching it over ssh (an orted elsewhere could not
// start it: "localhost" there is another machine). The ranks stay where
// they were placed; daemonIndex[i] is where m's node i went.
func localFirst(m *job.Map) (moved *job.Map, daemonIndex []int, err error) {
	var local []int
	for i, h := range m.Nodes {
		if isLocal(h.Name) {
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

// jobOptions are the placement flags, used for the first map and again
// when nodes are left out; np is the job's rank count, 0 for the default.
func jobOptions(c *cli.Context, np int) (job.Options, error) {
	if c.IsSet("np") && c.Int("np") <= 0 {
		return job.Options{}, fmt.Errorf("-np must be at least 1, not %d", c.Int("np"))
	}
	perNode := c.Int("npernode")
	m, err := mapBy(c)
	if err != nil {
		return job.Options{}, err
	}
	bind, err := bindPolicy(c, np) // the cores per rank may come from --bind-to core:N
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
	case ppr > 0:
		perNode = ppr
	}
	return job.Options{
		NP: np, NPerNode: perNode, MapBy: mapByPolicy, Oversubscribe: c.Bool("oversubscribe") || m.oversubscribe, PE: bind.PE,
	}, nil
}

// hostSource is the host list and where it came from, which messages
// about slots name.
type hostSource struct {
	hosts []job.Host
	from  string
}

// hostList reads -H, else --hostfile, else MPIRUN_HOSTFILE or Hydra's
// HYDRA_HOST_FILE, else the batch system's allocation, else Open MPI's
// default hostfile, else runs on this host with a slot per CPU.
// MPIRUN_HOSTFILE comes before the allocation so that a testbed started
// inside a batch job keeps its own nodes.
func hostList(c *cli.Context) (hostSource, error) {
	if values := c.StringSlice("host"); len(values) > 0 {
		var hosts []job.Host
		for _, v := range values {
			h, err := job.ParseHostList(v)
			if err != nil {
				return hostSource{}, err
			}
			hosts = append(hosts, h...)
		}
		return hostSource{hosts, "hosts from -H"}, nil
	}
	// Hydra's users name their hostfile in HYDRA_HOST_FILE.
	for _, path := range []string{c.String("hostfile"), os.Getenv("MPIRUN_HOSTFILE"), os.Getenv("HYDRA_HOST_FILE")} {
		if path != "" {
			hosts, err := job.ReadHostfile(path)
			return hostSource{hosts, "hosts from " + path}, err
		}
	}
	alloc, err := job.DetectAllocation(os.Getenv)
	if err != nil || alloc != nil {
		return allocationSource(alloc), err
	}
	// Open MPI's default hostfile serves, as under Open MPI, only outside
	// a batch allocation.
	if path := os.Getenv("OMPI_MCA_orte_default_hostfile"); path != "" && path != "none" {
		hosts, err := job.ReadHostfile(path)
		return hostSource{hosts, "hosts from " + path + " (OMPI_MCA_orte_default_hostfile)"}, err
	}
	n := runtime.NumCPU()
	return hostSource{[]job.Host{{Name: "localhost", Slots: n}}, "no hosts given: localhost with " + job.Slots(n)}, nil
}

func allocationSource(a *job.Allocation) hostSource {
	if a == nil {
		return hostSource{}
	}
	return hostSource{a.Hosts, "hosts from the batch allocation of " + a.Source}
}

func jobSpec(c *cli.Context, m *job.Map) (protocol.JobSpec, error) {
	degree, err := spawnDegree(c, len(m.Nodes))
	if err != nil {
		return protocol.JobSpec{}, usageError{err}
	}
	if _, err := routed.New(c.String("routed"), len(m.Nodes)+1, max(degree, 1)); err != nil {
		return protocol.JobSpec{}, usageError{err}
	}
	if err := checkBounds(c); err != nil {
		return protocol.JobSpec{}, usageError{err}
	}
	orted, err := ortedPath(c)
	if err != nil {
		return protocol.JobSpec{}, err
	}
	self, _ := os.Hostname()
	hosts := []string{self}
	for _, h := range m.Nodes {
		hosts = append(hosts, h.Name)
	}
	skip, err := onUnreachable(c.String("on-unreachable"))
	if err != nil {
		return protocol.JobSpec{}, usageError{err}
	}
	return protocol.JobSpec{
		ID:      fmt.Sprintf("prsh_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000_000),
		Daemons: len(m.Nodes) + 1, SpawnDegree: degree, SkipUnreachable: skip, HoldLaunch: c.Bool("hold-launch"),
		Routed: c.String("routed"), RoutedRadix: c.Int("routed-radix"),
		OrtedPath: orted, LogLevel: logLevel(c),
		SSHTimeoutMS:    c.Duration("ssh-connect-timeout").Milliseconds(),
		CallbackMS:      c.Duration("callback-timeout").Milliseconds(),
		KillGraceMS:     c.Duration("kill-grace").Milliseconds(),
		MaxSessions:     c.Int("ssh-max-sessions"),
		LaunchAgent:     c.String("launch-agent"),
		SSHConfig:       absPath(c.String("ssh-config")),
		SSHSystemConfig: systemConfig(c),
		Hosts:           hosts,
	}, nil
}

// systemConfig is the system-wide ssh config the daemons read: as given,
// else none when the user's file is named (as ssh -F), else each node's
// own ("").
func systemConfig(c *cli.Context) string {
	switch v := c.String("ssh-system-config"); {
	case v == "none":
		return v
	case v != "":
		return absPath(v)
	case c.String("ssh-config") != "":
		return "none"
	}
	return ""
}

// checkBounds rejects timeouts and limits that cannot work: a zero or
// negative timeout would fail every node at once.
// spawnDegree is --spawn-degree: a number, or auto, topo.BestDegree for
// the nodes and the hints: a hop (a session's start until its orted can
// spawn) and a spawner's cost per session, which is at least a hop shared
// by the sessions it opens at once.
func spawnDegree(c *cli.Context, nodes int) (int, error) {
	s := c.String("spawn-degree")
	if s != "auto" {
		degree, err := strconv.Atoi(s)
		if err != nil || degree < 0 {
			return 0, fmt.Errorf("--spawn-degree must be 0 or more, or auto, not %s", s)
		}
		return degree, nil
	}
	hop, cost := c.Duration("spawn-hop-hint"), c.Duration("spawn-cost-hint")
	if hop <= 0 || cost < 0 {
		return 0, fmt.Errorf("--spawn-hop-hint must be positive and --spawn-cost-hint 0 or more, not %v and %v", hop, cost)
	}
	if sessions := c.Int("ssh-max-sessions"); sessions > 0 {
		cost = max(cost, hop/time.Duration(sessions))
	}
	return topo.BestDegree(max(nodes, 1), hop.Microseconds(), cost.Microseconds()), nil
}

func checkBounds(c *cli.Context) error {
	for _, name := range []string{"ssh-connect-timeout", "callback-timeout"} {
		if d := c.Duration(name); d <= 0 {
			return fmt.Errorf("--%s must be positive, not %v", name, d)
		}
	}
	if d := c.Duration("kill-grace"); d < 0 {
		return fmt.Errorf("--kill-grace must be 0 or more, not %v", d)
	}
	if n := c.Int("ssh-max-sessions"); n < 1 {
		return fmt.Errorf("--ssh-max-sessions must be at least 1, not %d", n)
	}
	if ip := c.String("listen-ip"); ip != "" && net.ParseIP(ip) == nil {
		return fmt.Errorf("--listen-ip %q: want an IP address of this host, such as 10.0.0.1", ip)
	}
	return nil
}

func ortedPath(c *cli.Context) (string, error) {
	if p := c.String("orted"); p != "" {
		return absPath(p), nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find orted beside mpirun (use --orted): %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	return filepath.Join(filepath.Dir(self), "orted"), nil
}

// pmixSuffix names the daemon built with the PMIx server: orted-pmix,
// beside orted. orted itself is a static Go program without it, which
// starts in less CPU (spawn/PERFORMANCE.md); a job that may need PMIx
// runs orted-pmix where it is installed, and orted (whose ranks then
// fail naming the cause if they are Open MPI's) where it is not.
const pmixSuffix = "-pmix"

// withPMIx is the daemon with the PMIx server beside orted, if this
// node has one; the nodes are expected to have what the launch node has.
func withPMIx(orted string) string {
	if st, err := os.Stat(orted + pmixSuffix); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return orted + pmixSuffix
	}
	return orted
}

func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func logLevel(c *cli.Context) string {
	if c.Bool("verbose") {
		return "debug"
	}
	return c.String("log-level")
}

// logger is mpirun's log. At the default level it shows only warnings and
// errors, and those read as messages to the user, like mpirun's others:
// "mpirun: warning: identity file not found: file=…".
func logger(c *cli.Context, stderr io.Writer) hclog.Logger {
	level := hclog.LevelFromString(logLevel(c))
	if level >= hclog.Warn {
		return hclog.New(&hclog.LoggerOptions{Name: "mpirun", Level: level, Output: userLines{stderr}, DisableTime: true})
	}
	return hclog.New(&hclog.LoggerOptions{Name: "mpirun", Level: level, Output: stderr})
}

// userLines rewrites hclog's "[WARN]  mpirun.ssh: text" entries (one per
// Write) as "mpirun: warning: text".
type userLines struct{ w io.Writer }

func (u userLines) Write(p []byte) (int, error) {
	line := string(p)
	for prefix, kind := range map[string]string{"[WARN]": "warning", "[ERROR]": "error"} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if _, text, ok := strings.Cut(rest, ": "); ok {
				line = "mpirun: " + kind + ": " + text
			}
		}
	}
	if _, err := io.WriteString(u.w, line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// agent picks the launch agent: an external command if asked, a plain
// fork when the only node is this host, native ssh otherwise.
func agent(c *cli.Context, m *job.Map, spec protocol.JobSpec, log hclog.Logger) (launch.Agent, error) {
	if spec.LaunchAgent != "" {
		a, err := launch.NewCommand(spec.LaunchAgent)
		if err != nil {
			return nil, usageError{fmt.Errorf("--launch-agent: %w", err)}
		}
		return a, nil
	}
	fork := &launch.Fork{Logger: log.Named("fork")}
	local := isLocal(m.Nodes[0].Name) // localFirst put this host first
	if len(m.Nodes) == 1 && local {
		return fork, nil
	}
	a, err := launch.NewSSH(launch.SSHOptions{
		ConfigFile: spec.SSHConfig, SystemConfigFile: spec.SSHSystemConfig,
		ConnectTimeout: c.Duration("ssh-connect-timeout"),
		MaxSessions:    spec.MaxSessions, Logger: log.Named("ssh"),
	})
	if err == nil {
		err = a.CheckHosts(remoteHosts(m))
	}
	if err != nil {
		return nil, usageError{err}
	}
	if local {
		return &launch.Split{Local: m.Nodes[0].Name, Fork: fork, Remote: a}, nil
	}
	return a, nil
}

// remoteHosts are the host list's names of other hosts than this one.
func remoteHosts(m *job.Map) []string {
	var names []string
	for _, h := range m.Nodes {
		if !isLocal(h.Name) {
			names = append(names, h.Name)
		}
	}
	return names
}

func isLocal(host string) bool {
	self, _ := os.Hostname()
	return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == self
}

// bindIP is the address mpirun listens on: --listen-ip, else the local address
// that reaches the first node of another host.
func bindIP(c *cli.Context, a launch.Agent, m *job.Map) string {
	if ip := c.String("listen-ip"); ip != "" {
		return ip
	}
	remote := remoteHosts(m)
	if _, ok := a.(*launch.Fork); ok || len(remote) == 0 {
		return "127.0.0.1"
	}
	if split, ok := a.(*launch.Split); ok {
		a = split.Remote
	}
	target := remote[0]
	if i := strings.LastIndexByte(target, '@'); i >= 0 {
		target = target[i+1:]
	}
	target = net.JoinHostPort(target, "22")
	if r, ok := a.(interface{ Address(string) (string, error) }); ok {
		if addr, err := r.Address(remote[0]); err == nil {
			target = addr
		}
	}
	return daemon.IPToward(target)
}

func nodes(m *job.Map) []spawn.Node {
	out := make([]spawn.Node, len(m.Nodes))
	for i, h := range m.Nodes {
		out[i] = spawn.Node{ID: i + 1, Host: h.Name}
	}
	return out
}

// stagePlan lists the files --preload-binary and --preload-libs stage on
// every node: each program of the job and, with libs, what it loads.
func stagePlan(c *cli.Context, self string, app protocol.Launch) ([]protocol.StagedFile, error) {
	libs := c.Bool("preload-libs")
	if !c.Bool("preload-binary") && !libs {
		return nil, nil
	}
	progs := []stage.Program{{Arg: app.Argv[0], Wdir: app.Wdir}}
	for _, more := range app.More {
		progs = append(progs, stage.Program{Arg: more.Argv[0], Wdir: more.Wdir})
	}
	return stage.Plan(self, progs, libs)
}

// application is the launch message: the programs, their environment and
// where every rank runs.
func application(c *cli.Context, m *job.Map, contexts []appContext) (protocol.Launch, error) {
	env, err := jobEnv(c)
	if err != nil {
		return protocol.Launch{}, usageError{err}
	}
	first, err := exports(contexts[0].env)
	if err != nil {
		return protocol.Launch{}, usageError{err}
	}
	target, err := stdinRank(c.String("stdin"), m.Size())
	if err != nil {
		return protocol.Launch{}, usageError{err}
	}
	app := protocol.Launch{
		Argv: contexts[0].argv, Env: append(env, first...), RankNode: make([]int, m.Size()),
		StdinRank: target, MergeStderr: c.Bool("merge-stderr-to-stdout"),
	}
	for r, node := range m.RankNode {
		app.RankNode[r] = node + 1
	}
	if wdir := c.String("wdir"); wdir != "" {
		app.Wdir, app.WdirSet = absPath(wdir), true
	} else if cwd, err := os.Getwd(); err == nil {
		app.Wdir = cwd
	}
	if app.More, err = moreApps(contexts, env, app.Wdir, app.WdirSet); err != nil {
		return protocol.Launch{}, usageError{err}
	}
	if app.Bind, err = bindPolicy(c, m.Size()); err != nil {
		return protocol.Launch{}, usageError{err}
	}
	return app, nil
}

// noPMIx says whether the orteds may skip their PMIx server (--pmix):
// with auto, only when no program of the job may use it (modex/pmix/need
// says why), decided once, here on the launch node.
func noPMIx(mode string, app protocol.Launch, log hclog.Logger) (bool, error) {
	switch mode {
	case "on":
		return false, nil
	case "off":
		return true, nil
	case "auto":
	default:
		return false, fmt.Errorf("--pmix must be auto, on or off, not %q", mode)
	}
	progs := []need.Program{{Argv: app.Argv, Wdir: app.Wdir, Env: app.Env}}
	for _, more := range app.More {
		progs = append(progs, need.Program{Argv: more.Argv, Wdir: more.Wdir, Env: more.Env})
	}
	v := need.Decide(progs)
	log.Debug("PMIx server", "boot", v.Boot, "why", v.Why)
	return !v.Boot, nil
}
