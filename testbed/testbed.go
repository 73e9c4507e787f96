package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"prsh/testbed/agent"
	"prsh/testbed/nodes"
)

// Environment variables the testbed puts into every process it starts.
const (
	EnvRun  = nodes.EnvRun  // the cluster's random run id
	EnvNode = nodes.EnvNode // the node the process runs on
)

// Environment variables Cluster.Env hands to the command under test.
const (
	EnvHostfile  = "MPIRUN_HOSTFILE"
	EnvSSHConfig = "MPIRUN_SSH_CONFIG"
)

// Fault makes one node misbehave the way real nodes do.
type Fault struct {
	// Refuse: nothing listens on the node's port; connect gets ECONNREFUSED
	// (the port stays bound so no one else can take it).
	Refuse bool
	// Hang: TCP is accepted but the ssh version banner never comes, like a
	// node that is swapping to death or behind a black-holing firewall.
	Hang bool
	// WrongHostKey: the node presents a host key other than the one in
	// known_hosts, like a reinstalled node.
	WrongHostKey bool
	// KillAfter > 0: that long after the node's first session started,
	// every process of the node is SIGKILLed and the node is dead from then
	// on: later sessions end at once with exit-signal KILL, without running
	// their command. This emulates a node crash as seen by the processes.
	KillAfter time.Duration
	// DropLinksAfter > 0: that long after the node's first session started,
	// every TCP connection of the node's address is cut (with `ss -K`),
	// except its ssh sessions: the daemon's links break as when a switch
	// port dies, while the processes live on.
	DropLinksAfter time.Duration
	// MaxStartups > 0: at most that many connections may be between
	// accept and the end of their ssh handshake (authentication included)
	// at once; a connection beyond that is closed right after accept,
	// before the version banner, as OpenSSH's sshd does past MaxStartups
	// (the client sees "kex_exchange_identification: Connection closed by
	// remote host"). A connection that never speaks holds its startup for
	// the login grace time (2 minutes) or until it closes.
	MaxStartups int
	// Hold, if not nil: each session of the node waits until it is closed
	// before running its command, like a node whose ssh login or remote
	// start-up is slow, for as long as the test that made it chooses.
	Hold <-chan struct{}
}

// Config describes the cluster to emulate.
type Config struct {
	// Nodes is the number of virtual nodes: node001 … nodeNNN (three
	// digits at least, more when Nodes > 999).
	Nodes int
	// Slots is written to the hostfile for every node; 0 means 1.
	Slots int
	// SSHLatency delays each exec session before its command runs,
	// emulating the ssh handshake and remote start-up of a real cluster.
	SSHLatency time.Duration
	// SpawnCost is the launch agent's serial cost per session at each
	// spawner (see package agent); the ssh servers ignore it.
	SpawnCost time.Duration
	// UTS runs each node's processes in their own UTS namespace whose
	// hostname is the node's name (root only; see MaybeRunUTSHelper).
	UTS bool
	// Hide lists directories (absolute paths) that the nodes' processes
	// see empty: each runs in a mount namespace of its own with an empty
	// read-only tmpfs over each (root only). What is there exists for the
	// command under test (the launch node) and for nobody else. The
	// launch agent (testbed-agent) does not hide them.
	Hide []string
	// NodeTmp gives each node's processes a TMPDIR of their own,
	// DIR/tmp/NODE, as a node's local disk; NodeTmpFiles lists what is
	// left in them.
	NodeTmp bool
	// Dir receives hostfile, ssh_config, known_hosts and id_ed25519(.pub).
	// "" means a temporary directory that Close removes.
	Dir string
	// Faults by node name. Unknown names are an error, to catch typos.
	Faults map[string]Fault
	// Env is added to the environment of every node process ("K=V"),
	// after the login variables and before the testbed's own.
	Env []string
	// Logf, if set, receives a line per connection and session.
	Logf func(format string, args ...any)
}

// Node is one virtual node as a client sees it.
type Node struct {
	Name string
	Addr string // 127.x.y.z
	Port int
}

// Proc is a live process that the testbed started (or that descends from
// one and kept its environment).
type Proc struct {
	PID     int
	Node    string // "" for processes of the command under test itself
	Cmdline string
}

// Cluster is a running emulated cluster. Close it.
type Cluster struct {
	cfg   Config
	dir   string
	tmp   bool
	runID string
	user  string
	exe   string // for the UTS helper
	env   []string
	nodes []*node
	block int // the first loopback block the nodes' addresses are in

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	sessions atomic.Int64
	tunnels  atomic.Int64

	mu      sync.Mutex
	closing bool
	closers []io.Closer
	conns   map[net.Conn]struct{}
	procs   map[*os.Process]struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start brings the cluster up: keys, files and one ssh server per node.
func Start(cfg Config) (*Cluster, error) {
	if err := validate(cfg); err != nil {
		return nil, err
	}
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.setup(); err != nil {
		c.Close()
		return nil, err
	}
	c.logf("testbed: %d nodes up, run %s, files in %s", len(c.nodes), c.runID, c.dir)
	return c, nil
}

func validate(cfg Config) error {
	if cfg.Nodes < 1 {
		return fmt.Errorf("testbed: Nodes must be at least 1, got %d", cfg.Nodes)
	}
	if cfg.Slots < 0 {
		return fmt.Errorf("testbed: Slots must not be negative, got %d", cfg.Slots)
	}
	if cfg.UTS && os.Geteuid() != 0 {
		return errors.New("testbed: UTS namespaces need root (CAP_SYS_ADMIN); run as root or drop UTS")
	}
	if len(cfg.Hide) > 0 && os.Geteuid() != 0 {
		return errors.New("testbed: hiding directories needs root (CAP_SYS_ADMIN); run as root or drop Hide")
	}
	for _, d := range cfg.Hide {
		if !filepath.IsAbs(d) || strings.Contains(d, ":") {
			return fmt.Errorf("testbed: Hide: %q must be an absolute path without ':'", d)
		}
	}
	names := make(map[string]bool, cfg.Nodes)
	for i := 1; i <= cfg.Nodes; i++ {
		names[nodes.Name(i, cfg.Nodes)] = true
	}
	for name, f := range cfg.Faults {
		if !names[name] {
			return fmt.Errorf("testbed: fault for unknown node %q (nodes are %s … %s)",
				name, nodes.Name(1, cfg.Nodes), nodes.Name(cfg.Nodes, cfg.Nodes))
		}
		if f.KillAfter < 0 {
			return fmt.Errorf("testbed: negative KillAfter for %s", name)
		}
		if f.MaxStartups < 0 {
			return fmt.Errorf("testbed: negative MaxStartups for %s", name)
		}
	}
	if _, err := nodes.Addr(1, cfg.Nodes); err != nil {
		return err
	}
	return nil
}

func newCluster(cfg Config) (*Cluster, error) {
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("testbed: run id: %w", err)
	}
	user, err := currentUser()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil && (cfg.UTS || len(cfg.Hide) > 0) {
		return nil, fmt.Errorf("testbed: UTS helper needs os.Executable: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Cluster{
		cfg:    cfg,
		runID:  hex.EncodeToString(id),
		user:   user,
		exe:    exe,
		env:    nodes.LoginEnv(user),
		ctx:    ctx,
		cancel: cancel,
		conns:  make(map[net.Conn]struct{}),
		procs:  make(map[*os.Process]struct{}),
	}, nil
}

// setup creates the directory, keys, listeners and files, then starts
// serving. Listeners come before files because the files name the ports.
func (c *Cluster) setup() error {
	if err := c.makeDir(); err != nil {
		return err
	}
	keys, err := newKeys()
	if err != nil {
		return err
	}
	block, claims, err := claimBlocks(c.cfg.Nodes)
	if err != nil {
		return err
	}
	c.block = block
	for _, cl := range claims {
		if !c.addCloser(cl) {
			cl.Close()
		}
	}
	if err := c.listenAll(keys); err != nil {
		return err
	}
	if err := c.makeNodeTmp(); err != nil {
		return err
	}
	return writeFiles(c, keys)
}

func (c *Cluster) makeDir() error {
	if c.cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "prsh-testbed-")
		if err != nil {
			return fmt.Errorf("testbed: temp dir: %w", err)
		}
		c.dir, c.tmp = dir, true
		return nil
	}
	dir, err := filepath.Abs(c.cfg.Dir)
	if err != nil {
		return fmt.Errorf("testbed: dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("testbed: dir: %w", err)
	}
	c.dir = dir
	return nil
}

func (c *Cluster) makeNodeTmp() error {
	if !c.cfg.NodeTmp {
		return nil
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(c.NodeTmpDir(n.Name), 0o700); err != nil {
			return fmt.Errorf("testbed: node TMPDIR: %w", err)
		}
	}
	return nil
}

// NodeTmpDir is the TMPDIR of a node's processes with Config.NodeTmp.
func (c *Cluster) NodeTmpDir(node string) string { return filepath.Join(c.dir, "tmp", node) }

// NodeTmpFiles lists, as NODE/NAME, what is in the nodes' TMPDIRs
// (Config.NodeTmp) and whose name starts with prefix.
func (c *Cluster) NodeTmpFiles(prefix string) []string {
	var out []string
	for _, n := range c.nodes {
		entries, _ := os.ReadDir(c.NodeTmpDir(n.Name))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				out = append(out, n.Name+"/"+e.Name())
			}
		}
	}
	return out
}

// Nodes lists the virtual nodes in order.
func (c *Cluster) Nodes() []Node {
	out := make([]Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Node
	}
	return out
}

// Node returns the node with the given name.
func (c *Cluster) Node(name string) (Node, bool) {
	i := sort.Search(len(c.nodes), func(i int) bool { return c.nodes[i].Name >= name })
	if i < len(c.nodes) && c.nodes[i].Name == name {
		return c.nodes[i].Node, true
	}
	return Node{}, false
}

// RunID is the random id carried in PRSH_TESTBED_RUN by every process.
func (c *Cluster) RunID() string { return c.runID }

// User is the login name the nodes accept (the current user).
func (c *Cluster) User() string { return c.user }

// Dir is the directory holding the cluster's files.
func (c *Cluster) Dir() string { return c.dir }

// HostfilePath is DIR/hostfile ("node001 slots=S" per line).
func (c *Cluster) HostfilePath() string { return filepath.Join(c.dir, "hostfile") }

// SSHConfigPath is DIR/ssh_config, usable with `ssh -F`.
func (c *Cluster) SSHConfigPath() string { return filepath.Join(c.dir, "ssh_config") }

// KnownHostsPath is DIR/known_hosts, listing the cluster's host key for
// every node under both its address and its name.
func (c *Cluster) KnownHostsPath() string { return filepath.Join(c.dir, "known_hosts") }

// IdentityPath is DIR/id_ed25519, the only client key the nodes accept.
func (c *Cluster) IdentityPath() string { return filepath.Join(c.dir, "id_ed25519") }

// AgentConfigPath is DIR/agent.conf, the launch agent's settings.
func (c *Cluster) AgentConfigPath() string { return filepath.Join(c.dir, "agent.conf") }

// Env is the extra environment for a command run against the cluster.
// PRSH_TESTBED_RUN is included so that the command's own stray processes
// count as leftovers too, PRSH_TESTBED_AGENT so that testbed-agent finds
// the cluster.
func (c *Cluster) Env() []string {
	return []string{
		EnvHostfile + "=" + c.HostfilePath(),
		EnvSSHConfig + "=" + c.SSHConfigPath(),
		EnvRun + "=" + c.runID,
		agent.EnvConfig + "=" + c.AgentConfigPath(),
	}
}

// Dropped is the number of connections node has closed at accept because
// of its MaxStartups fault.
func (c *Cluster) Dropped(node string) int {
	for _, n := range c.nodes {
		if n.Name == node {
			return int(n.dropped.Load())
		}
	}
	return 0
}

// Sessions is the number of exec (or shell) sessions served so far.
func (c *Cluster) Sessions() int { return int(c.sessions.Load()) }

// Tunnels is the number of direct-tcpip channels (jump host hops) opened.
func (c *Cluster) Tunnels() int { return int(c.tunnels.Load()) }

func (c *Cluster) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(format, args...)
	}
}

// Close stops all listeners and connections, kills every process the
// testbed started that is still alive, waits for all of the cluster's
// goroutines, and removes the directory if it was a temporary one.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		c.closeNetwork()
		c.KillLeftovers()
		c.killChildren()
		c.wg.Wait()
		if c.tmp {
			if err := os.RemoveAll(c.dir); err != nil {
				c.closeErr = fmt.Errorf("testbed: remove %s: %w", c.dir, err)
			}
		}
	})
	return c.closeErr
}

// closeNetwork closes listeners, reserved ports and live connections, which
// ends every accept loop, handshake and session request loop.
func (c *Cluster) closeNetwork() {
	c.mu.Lock()
	c.closing = true
	closers, conns := c.closers, c.conns
	c.closers, c.conns = nil, map[net.Conn]struct{}{}
	c.mu.Unlock()
	for _, cl := range closers {
		cl.Close()
	}
	for conn := range conns {
		conn.Close()
	}
}

// killChildren kills the direct children still running, including those
// that escaped KillLeftovers by exec'ing with a scrubbed environment, so
// that the goroutines waiting for them end.
func (c *Cluster) killChildren() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.procs {
		p.Kill()
	}
}

// addCloser registers a listener or reserved socket for Close; it reports
// false (and the caller must close it) if the cluster is already closing.
func (c *Cluster) addCloser(cl io.Closer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.closers = append(c.closers, cl)
	return true
}

func (c *Cluster) trackConn(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.conns[conn] = struct{}{}
	return true
}

func (c *Cluster) untrackConn(conn net.Conn) {
	c.mu.Lock()
	delete(c.conns, conn)
	c.mu.Unlock()
	conn.Close()
}

// trackProc registers a started child; if the cluster is closing it kills
// the child at once so that nothing outlives Close.
func (c *Cluster) trackProc(p *os.Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		p.Kill()
	}
	c.procs[p] = struct{}{}
}

func (c *Cluster) untrackProc(p *os.Process) {
	c.mu.Lock()
	delete(c.procs, p)
	c.mu.Unlock()
}
