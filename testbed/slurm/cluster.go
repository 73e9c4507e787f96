package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"prsh/testbed"
)

// Config describes a cluster.
type Config struct {
	Nodes int    // compute nodes node1 … nodeN, 1 ≤ N ≤ MaxNodes
	CPUs  int    // CPUs of each node (default 1)
	Dir   string // configuration, logs, spool, the nodes' /tmp; default a temporary directory Close removes

	// Shared are directories under /tmp that the nodes see as the host
	// does (a shared file system), although each node has a /tmp of its
	// own; Dir and the caller's working directory (where commands and
	// their jobs start) are always shared. Directories elsewhere are
	// shared anyway.
	Shared []string

	// BindTasks has each slurmd bind what it starts to the job's CPUs on
	// its node (TaskPlugin=task/affinity: the batch script, and every step,
	// --cpu-bind=none or not), as a site's Slurm confines jobs; by default
	// nothing is bound (task/none).
	BindTasks bool

	// StartTimeout bounds the wait until every node is idle (default 30 s
	// plus 0.2 s per node).
	StartTimeout time.Duration
}

// Cluster is a running Slurm cluster. Close it.
type Cluster struct {
	layout  layout
	bins    binaries
	tempDir bool

	init     *exec.Cmd
	lifeline *os.File      // init stops the daemons when this closes
	exited   chan struct{} // closed when init has been reaped
	pidNS    string        // readlink of init's /proc/PID/ns/pid

	closeOnce sync.Once
	closeErr  error
}

// Bounds of Close: how long the cluster's own processes (steps, tasks,
// commands) may take to end before they count as left running, and how
// long init may take to stop the daemons before it is killed.
const (
	leftoverGrace = 3 * time.Second
	stopTimeout   = 15 * time.Second
)

// Start brings up munged, slurmctld and one slurmd per node in private
// namespaces and returns once every node is idle.
func Start(cfg Config) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if cfg.Nodes < 1 || cfg.Nodes > MaxNodes {
		return nil, fmt.Errorf("slurm: %d nodes: want 1 to %d", cfg.Nodes, MaxNodes)
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 1
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30*time.Second + time.Duration(cfg.Nodes)*200*time.Millisecond
	}
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.startInit(); err != nil {
		c.removeDir()
		return nil, err
	}
	if err := c.waitIdle(cfg.StartTimeout); err != nil {
		if cerr := c.Close(); cerr != nil {
			err = fmt.Errorf("%w; closing: %v", err, cerr)
		}
		return nil, err
	}
	return c, nil
}

func newCluster(cfg Config) (*Cluster, error) {
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bins: bins, exited: make(chan struct{})}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "testbed-slurm-"); err != nil {
			return nil, err
		}
		c.tempDir = true
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	shared := append([]string{dir}, cfg.Shared...)
	if wd, err := os.Getwd(); err == nil {
		shared = append(shared, wd)
	}
	c.layout = layout{dir: dir, nodes: cfg.Nodes, shared: sharedUnderTmp(shared)}
	if err := c.layout.write(cfg); err != nil {
		c.removeDir()
		return nil, fmt.Errorf("slurm: writing %s: %w", dir, err)
	}
	return c, nil
}

// startInit starts the namespaces' init, whose stdin is the lifeline: if
// the caller dies, init stops the daemons and exits, which kills the rest.
func (c *Cluster) startInit() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.Create(c.layout.initLog())
	if err != nil {
		return err
	}
	defer log.Close()
	lifeline, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer lifeline.Close()
	c.init = exec.Command(exe, initArg, c.layout.dir, strconv.Itoa(c.layout.nodes), c.layout.shared)
	c.init.Env = append(os.Environ(), c.layout.env()...)
	c.init.Stdin, c.init.Stdout, c.init.Stderr = lifeline, log, log
	c.init.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWPID,
		Setpgid:    true, // a terminal's Ctrl-C is the caller's to handle
	}
	if err := c.init.Start(); err != nil {
		w.Close()
		return fmt.Errorf("slurm: starting the cluster's namespaces: %w", err)
	}
	c.lifeline = w
	go func() {
		c.init.Wait()
		close(c.exited)
	}()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", c.init.Process.Pid))
	if err != nil {
		c.stopInit()
		return fmt.Errorf("slurm: the cluster's init is gone: %w\n%s", err, c.logTail())
	}
	c.pidNS = ns
	return nil
}

// waitIdle polls sinfo until every node is idle.
func (c *Cluster) waitIdle(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		out, err := c.Command(ctx, c.bins.sinfo, "--noheader", "--Node", "--format=%N %t").CombinedOutput()
		last = strings.TrimSpace(string(out))
		if err == nil && c.allIdle(last) {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("slurm: the cluster's init exited during start-up\n%s", c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("slurm: nodes not idle after %v (sinfo: %q)\n%s", timeout, last, c.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) allIdle(sinfo string) bool {
	idle := 0
	for _, line := range strings.Split(sinfo, "\n") {
		if _, state, ok := strings.Cut(line, " "); ok && state == "idle" {
			idle++
		}
	}
	return idle == c.layout.nodes
}

// logTail is the end of init's log and slurmctld's, for error messages.
func (c *Cluster) logTail() string {
	var b strings.Builder
	for _, f := range []string{c.layout.initLog(), filepath.Join(c.layout.logDir(), "slurmctld.log")} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (end)\n%s\n", f, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// Command runs argv inside the cluster, on the controller (hostname
// slurmctl), with the cluster's environment added to the caller's: salloc,
// srun, sbatch and the rest work as on a login node. It starts in the
// caller's working directory, or in cmd.Dir if set.
//
// It goes through nsenter(1) into init's namespaces because Go cannot
// join a mount namespace itself: setns(CLONE_NEWNS) fails in a process
// with several threads. The command stays the caller's child (exit status,
// stdio, Wait as usual), but nsenter forks it into the PID namespace and
// forwards no signal: signal the process group (the command leads its own)
// to reach it. Cancelling ctx kills the whole group.
func (c *Cluster) Command(ctx context.Context, argv ...string) *exec.Cmd {
	args := []string{"--target", strconv.Itoa(c.init.Process.Pid),
		"--net", "--mount", "--uts", "--pid", "--wd=.", "--"}
	cmd := exec.CommandContext(ctx, c.bins.nsenter, append(args, argv...)...)
	cmd.Env = append(os.Environ(), c.layout.env()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// InitPID is the host pid of the cluster's init, whose namespaces Command
// enters (nsenter --target).
func (c *Cluster) InitPID() int { return c.init.Process.Pid }

// Env is what a command in the cluster needs besides the caller's
// environment (Command adds it): SLURM_CONF.
func (c *Cluster) Env() []string { return c.layout.env() }

// Dir is the cluster's directory: slurm.conf, log/, spool/, tmp/NODE.
func (c *Cluster) Dir() string { return c.layout.dir }

// Nodes are the compute nodes' names, node1 … nodeN.
func (c *Cluster) Nodes() []string {
	names := make([]string, c.layout.nodes)
	for i := range names {
		names[i] = nodeName(i + 1)
	}
	return names
}

// NodeTmp is the host directory that is node's /tmp.
func (c *Cluster) NodeTmp(node string) string {
	return filepath.Join(c.layout.dir, "tmp", node)
}

// Close waits up to leftoverGrace for the processes that are not the
// cluster's daemons to end, stops the daemons, and checks that nothing is
// left in the cluster's PID namespace. Processes still running at Close
// (and killed by it) make its error; the directory is then kept for the
// logs, unless it was the caller's.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	var errs []error
	if left := c.WaitNoLeftovers(leftoverGrace); len(left) > 0 {
		errs = append(errs, fmt.Errorf("slurm: left running at Close (killed): %s", formatProcs(left)))
	}
	if err := c.stopInit(); err != nil {
		errs = append(errs, err)
	}
	if left := c.inNamespace(); len(left) > 0 {
		procs := make([]testbed.Proc, len(left))
		for i, p := range left {
			procs[i] = p.Proc
		}
		errs = append(errs, fmt.Errorf("slurm: still running after the cluster stopped: %s", formatProcs(procs)))
	}
	if len(errs) == 0 {
		c.removeDir()
	} else if c.tempDir {
		errs = append(errs, fmt.Errorf("slurm: logs kept in %s", c.layout.dir))
	}
	return errors.Join(errs...)
}

// stopInit closes the lifeline and waits for init, which stops the
// daemons; past stopTimeout it kills init, and with it the namespace.
func (c *Cluster) stopInit() error {
	c.lifeline.Close()
	select {
	case <-c.exited:
		if !c.init.ProcessState.Success() { // a daemon died, and init stopped the rest
			return fmt.Errorf("slurm: the cluster stopped early (%v)\n%s", c.init.ProcessState, c.logTail())
		}
		return nil
	case <-time.After(stopTimeout):
		c.init.Process.Kill()
		<-c.exited
		return fmt.Errorf("slurm: the daemons did not stop within %v (killed)\n%s", stopTimeout, c.logTail())
	}
}

func (c *Cluster) removeDir() {
	if c.tempDir {
		os.RemoveAll(c.layout.dir)
	}
}

func formatProcs(ps []testbed.Proc) string {
	var b strings.Builder
	for _, p := range ps {
		where := p.Node
		if where == "" {
			where = controllerName
		}
		fmt.Fprintf(&b, "\n\ton %s: pid %d: %s", where, p.PID, p.Cmdline)
	}
	return b.String()
}
