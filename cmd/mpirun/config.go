package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"prsh/daemon"
	"prsh/daemon/protocol"
	"prsh/job"
	"prsh/routed"
	"prsh/spawn"
	"prsh/spawn/launch"
	"prsh/transport"
)

// configure turns the command line into mpirun's daemon configuration.
func configure(c *cli.Context) (daemon.Config, error) {
	jobMap, err := jobMap(c)
	if err != nil {
		return daemon.Config{}, err
	}
	spec, err := jobSpec(c, jobMap)
	if err != nil {
		return daemon.Config{}, err
	}
	log := logger(c)
	agent, err := agent(c, jobMap, spec, log)
	if err != nil {
		return daemon.Config{}, err
	}
	secret, err := transport.NewSecret()
	if err != nil {
		return daemon.Config{}, err
	}
	app, err := application(c, jobMap)
	if err != nil {
		return daemon.Config{}, err
	}
	limit, err := timeout(c.String("timeout"))
	if err != nil {
		return daemon.Config{}, usageError{err}
	}
	return daemon.Config{
		ID: 0, Node: spec.Hosts[0], Secret: secret, Log: log,
		Bind: bindIP(c, agent, jobMap), Job: spec, Nodes: nodes(jobMap), App: app, Agent: agent,
		Stdout: os.Stdout, Stderr: os.Stderr, ReportTimes: c.Bool("report-launch-times"),
		Output: outputOptions(c), Stdin: stdinSource(app.StdinRank), Timeout: limit,
		Remap: remapper(c, jobMap),
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
// same options; a default -np shrinks with the nodes.
func remapper(c *cli.Context, m *job.Map) func(skipped map[int]bool) ([]int, error) {
	return func(skipped map[int]bool) ([]int, error) {
		var hosts []job.Host
		var ids []int
		for i, h := range m.Nodes {
			if !skipped[i+1] {
				hosts = append(hosts, h)
				ids = append(ids, i+1)
			}
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("no node could be reached")
		}
		opt, _ := jobOptions(c) // checked when the first map was built
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

func jobMap(c *cli.Context) (*job.Map, error) {
	hosts, err := hostList(c)
	if err != nil {
		return nil, usageError{err}
	}
	opt, err := jobOptions(c)
	if err != nil {
		return nil, usageError{err}
	}
	m, err := job.Build(hosts, opt)
	if err != nil {
		return nil, usageError{err}
	}
	return m, nil
}

// jobOptions are the placement flags, used for the first map and again
// when nodes are left out.
func jobOptions(c *cli.Context) (job.Options, error) {
	if c.IsSet("np") && c.Int("np") <= 0 {
		return job.Options{}, fmt.Errorf("-np must be at least 1, not %d", c.Int("np"))
	}
	mapBy, err := job.ParseMapBy(c.String("map-by"))
	if err != nil {
		return job.Options{}, err
	}
	return job.Options{
		NP: c.Int("np"), NPerNode: c.Int("npernode"), MapBy: mapBy, Oversubscribe: c.Bool("oversubscribe"),
	}, nil
}

// hostList reads -H, else the hostfile, else runs on this host alone.
func hostList(c *cli.Context) ([]job.Host, error) {
	if values := c.StringSlice("host"); len(values) > 0 {
		var hosts []job.Host
		for _, v := range values {
			h, err := job.ParseHostList(v)
			if err != nil {
				return nil, err
			}
			hosts = append(hosts, h...)
		}
		return hosts, nil
	}
	if path := c.String("hostfile"); path != "" {
		return job.ReadHostfile(path)
	}
	return []job.Host{{Name: "localhost", Slots: 1}}, nil
}

func jobSpec(c *cli.Context, m *job.Map) (protocol.JobSpec, error) {
	degree := c.Int("spawn-degree")
	if degree < 0 {
		return protocol.JobSpec{}, usageError{fmt.Errorf("--spawn-degree must be 0 or more, not %d", degree)}
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
		SSHTimeoutMS: c.Duration("ssh-connect-timeout").Milliseconds(),
		CallbackMS:   c.Duration("callback-timeout").Milliseconds(),
		KillGraceMS:  c.Duration("kill-grace").Milliseconds(),
		MaxSessions:  c.Int("ssh-max-sessions"),
		LaunchAgent:  c.String("launch-agent"),
		SSHConfig:    absPath(c.String("ssh-config")),
		Hosts:        hosts,
	}, nil
}

// checkBounds rejects timeouts and limits that cannot work: a zero or
// negative timeout would fail every node at once.
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

func logger(c *cli.Context) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "mpirun", Level: hclog.LevelFromString(logLevel(c)), Output: os.Stderr})
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
	if len(m.Nodes) == 1 && isLocal(m.Nodes[0].Name) {
		return &launch.Fork{Logger: log.Named("fork")}, nil
	}
	a, err := launch.NewSSH(launch.SSHOptions{
		ConfigFile: spec.SSHConfig, ConnectTimeout: c.Duration("ssh-connect-timeout"),
		MaxSessions: spec.MaxSessions, Logger: log.Named("ssh"),
	})
	if err != nil {
		return nil, usageError{err}
	}
	return a, nil
}

func isLocal(host string) bool {
	self, _ := os.Hostname()
	return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == self
}

// bindIP is the address mpirun listens on: --bind, else the local address
// that reaches the first node.
func bindIP(c *cli.Context, a launch.Agent, m *job.Map) string {
	if ip := c.String("bind"); ip != "" {
		return ip
	}
	if _, ok := a.(*launch.Fork); ok {
		return "127.0.0.1"
	}
	target := m.Nodes[0].Name
	if i := strings.LastIndexByte(target, '@'); i >= 0 {
		target = target[i+1:]
	}
	target = net.JoinHostPort(target, "22")
	if r, ok := a.(interface{ Address(string) (string, error) }); ok {
		if addr, err := r.Address(m.Nodes[0].Name); err == nil {
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

// application is the launch message: the command, its environment and
// where every rank runs.
func application(c *cli.Context, m *job.Map) (protocol.Launch, error) {
	env, err := exports(c.StringSlice("x"))
	if err != nil {
		return protocol.Launch{}, usageError{err}
	}
	target, err := stdinRank(c.String("stdin"), m.Size())
	if err != nil {
		return protocol.Launch{}, usageError{err}
	}
	app := protocol.Launch{
		Argv: c.Args().Slice(), Env: env, RankNode: make([]int, m.Size()),
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
	return app, nil
}

// exports resolves -x VAR (from mpirun's environment) and -x VAR=value.
func exports(vars []string) ([]string, error) {
	var env []string
	for _, v := range vars {
		name, value, hasValue := strings.Cut(v, "=")
		if name == "" {
			return nil, fmt.Errorf("-x %q: no variable name", v)
		}
		if !hasValue {
			var ok bool
			if value, ok = os.LookupEnv(name); !ok {
				continue
			}
		}
		env = append(env, name+"="+value)
	}
	return env, nil
}
