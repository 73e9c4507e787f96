package slurm

import (
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The cluster re-executes its own binary (os.Executable) with a hidden
// first argument, because Go cannot run code between clone and exec:
//
//	EXE __testbed_slurm_init DIR NODES SHARED
//	EXE __testbed_slurm_node NAME TMPDIR SHARED PATH ARGV0 ARGS...
//
// SHARED lists the directories under /tmp that every node sees as the host
// does, joined by ':'.
//
// init is PID 1 of the cluster's namespaces: it sets them up, starts the
// daemons, reaps every orphan, and stops the daemons when its stdin (the
// caller's lifeline) reaches EOF. When it exits, the kernel kills whatever
// is left in its PID namespace. node sets a slurmd's hostname and /tmp in
// its own UTS and mount namespaces, then execs it.
const (
	initArg = "__testbed_slurm_init"
	nodeArg = "__testbed_slurm_node"
)

// The hook runs from init so that a binary importing this package cannot
// mistake a helper invocation for a normal run (a test binary would run
// its tests inside the namespace).
func init() { MaybeRunHelper() }

// MaybeRunHelper runs the helper and exits if the process was started as
// one; otherwise it returns at once. Call it first thing in main and in
// TestMain, to make the dependency explicit.
func MaybeRunHelper() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case initArg:
		os.Exit(runInit(os.Args[2:]))
	case nodeArg:
		os.Exit(runNode(os.Args[2:]))
	}
}

// Bounds of init's orderly stop: each group of daemons gets stopGrace
// after SIGTERM before init moves on (and finally exits, which kills them).
const stopGrace = 3 * time.Second

func runInit(args []string) int {
	logger := log.New(os.Stderr, "slurm init: ", log.Lmicroseconds)
	if len(args) != 3 {
		logger.Printf("usage: %s DIR NODES SHARED", initArg)
		return 2
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		logger.Printf("nodes %q: %v", args[1], err)
		return 2
	}
	l := layout{dir: args[0], nodes: n, shared: args[2]}
	bins, err := findBinaries()
	if err == nil {
		err = setupNamespace(l, bins.ip)
	}
	if err != nil {
		logger.Print(err)
		return 1
	}
	d := newDaemons(logger)
	go d.reap()
	if err := d.startAll(l, bins); err != nil {
		logger.Print(err)
		d.stopAll()
		return 1
	}
	status := 0
	select {
	case <-stopRequested(os.Stdin):
	case name := <-d.died:
		logger.Printf("stopping the cluster: %s died", name)
		status = 1
	}
	d.stopAll()
	return status
}

// setupNamespace makes the new mount, UTS and network namespaces look like
// the controller's host: its own /proc, hostname, /etc/hosts and loopback
// addresses. glibc's getaddrinfo with AI_ADDRCONFIG (which Slurm uses)
// finds no IPv4 at all while lo has only 127.0.0.1, hence the others.
func setupNamespace(l layout, ip string) error {
	steps := []struct {
		what string
		do   func() error
	}{
		{"making the mounts private", func() error { return syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, "") }},
		{"mounting /proc", func() error {
			return syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NOEXEC|syscall.MS_NODEV, "")
		}},
		{"setting the hostname", func() error { return syscall.Sethostname([]byte(controllerName)) }},
		{"binding /etc/hosts", func() error { return syscall.Mount(l.hosts(), "/etc/hosts", "", syscall.MS_BIND, "") }},
		{"configuring lo", func() error { return configureLoopback(ip, l.nodes) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

func configureLoopback(ip string, nodes int) error {
	var batch strings.Builder
	batch.WriteString("link set lo up\n")
	fmt.Fprintf(&batch, "addr add %s/32 dev lo\n", controllerAddr)
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&batch, "addr add %s/32 dev lo\n", nodeAddr(i))
	}
	cmd := exec.Command(ip, "-batch", "-")
	cmd.Stdin = strings.NewReader(batch.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip: %v: %s", err, out)
	}
	return nil
}

// stopRequested is closed when the lifeline reaches EOF or init is asked
// to stop by a signal.
func stopRequested(lifeline io.Reader) <-chan struct{} {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, lifeline)
		sigs <- syscall.SIGHUP
	}()
	go func() {
		<-sigs
		close(stop)
	}()
	return stop
}

// daemons are init's children, started without exec.Cmd.Wait: as PID 1,
// init reaps every process with wait4(-1), its own and orphans alike.
type daemons struct {
	logger *log.Logger
	mu     sync.Mutex
	live   map[int]string // pid → name, until reaped
	groups [][]*os.Process
	sigchl chan os.Signal

	stopping bool        // set by stopAll: exits are expected from then on
	died     chan string // the first daemon to exit before stopAll
}

func newDaemons(logger *log.Logger) *daemons {
	d := &daemons{logger: logger, live: map[int]string{}, sigchl: make(chan os.Signal, 1), died: make(chan string, 1)}
	signal.Notify(d.sigchl, syscall.SIGCHLD) // before the first child starts
	return d
}

func (d *daemons) reap() {
	for range d.sigchl {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			d.mu.Lock()
			name, ok := d.live[pid]
			delete(d.live, pid)
			early := ok && !d.stopping
			d.mu.Unlock()
			if ok {
				d.logger.Printf("%s (pid %d) exited: %v", name, pid, exitString(ws))
			}
			if early {
				select {
				case d.died <- name:
				default:
				}
			}
		}
	}
}

func exitString(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return "status " + strconv.Itoa(ws.ExitStatus())
}

// startAll starts munged, then slurmctld, then the slurmd's; the order in
// which stopAll stops them is the reverse.
func (d *daemons) startAll(l layout, bins binaries) error {
	munged, err := d.start("munged", exec.Command(bins.munged, "--foreground", "--force",
		"--socket="+l.mungeSock(), "--key-file="+l.mungeKey(),
		"--log-file="+l.logDir()+"/munged.log", "--pid-file="+l.runDir()+"/munged.pid",
		"--seed-file="+l.mungeDir()+"/munged.seed"))
	if err != nil {
		return err
	}
	d.groups = append(d.groups, []*os.Process{munged})
	if err := waitForFile(l.mungeSock(), 10*time.Second); err != nil {
		return fmt.Errorf("munged: %w", err)
	}
	ctld, err := d.start("slurmctld", exec.Command(bins.slurmctld, "-D", "-c", "-i"))
	if err != nil {
		return err
	}
	d.groups = append(d.groups, []*os.Process{ctld})
	var slurmds []*os.Process
	defer func() { d.groups = append(d.groups, slurmds) }()
	for i := 1; i <= l.nodes; i++ {
		p, err := d.start("slurmd "+nodeName(i), nodeCommand(nodeName(i), l.tmp(i), l.shared, bins.slurmd, "-D", "-N", nodeName(i)))
		if err != nil {
			return err
		}
		slurmds = append(slurmds, p)
	}
	return nil
}

// nodeCommand runs argv through the node helper in fresh UTS and mount
// namespaces.
func nodeCommand(name, tmp, shared, path string, argv ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	cmd := exec.Command(exe, append([]string{nodeArg, name, tmp, shared, path, path}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS}
	return cmd
}

func (d *daemons) start(name string, cmd *exec.Cmd) (*os.Process, error) {
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	d.mu.Lock() // the reaper must find the pid once it can be reaped
	defer d.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d.live[cmd.Process.Pid] = name
	return cmd.Process, nil
}

// stopAll sends SIGTERM to each group, last started first, and waits for
// the group to be reaped; a daemon that outlives stopGrace dies with init.
func (d *daemons) stopAll() {
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	for g := len(d.groups) - 1; g >= 0; g-- {
		for _, p := range d.groups[g] {
			p.Signal(syscall.SIGTERM)
		}
		deadline := time.Now().Add(stopGrace)
		for d.anyLive(d.groups[g]) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (d *daemons) anyLive(group []*os.Process) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range group {
		if _, ok := d.live[p.Pid]; ok {
			return true
		}
	}
	return false
}

func waitForFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runNode is the node helper: it gives the slurmd its node's hostname and
// a /tmp of its own (bound from the cluster's directory, so that a test
// can look into it), then execs it. Its tasks inherit both. The shared
// directories that lie under /tmp are bound back at their own paths, so
// that they stay shared, like a shared file system.
func runNode(args []string) int {
	if len(args) < 5 {
		fmt.Fprintf(os.Stderr, "usage: %s NAME TMPDIR SHARED PATH ARGV0 ARGS...\n", nodeArg)
		return 2
	}
	name, tmp, shared, path, argv := args[0], args[1], splitShared(args[2]), args[3], args[4:]
	if err := setupNode(name, tmp, shared); err != nil {
		fmt.Fprintf(os.Stderr, "slurm node %s: %v\n", name, err)
		return 1
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "slurm node %s: exec %s: %v\n", name, path, err)
	return 127
}

func setupNode(name, tmp string, shared []string) error {
	if err := syscall.Sethostname([]byte(name)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	// Hold the shared directories open: /tmp is about to hide them.
	var keep []*os.File
	for _, dir := range shared {
		f, err := os.Open(dir)
		if err != nil {
			return fmt.Errorf("shared directory: %w", err)
		}
		defer f.Close()
		keep = append(keep, f)
	}
	if err := syscall.Mount(tmp, "/tmp", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding %s over /tmp: %w", tmp, err)
	}
	for _, f := range keep {
		if err := os.MkdirAll(f.Name(), 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), f.Name(), "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding back %s: %w", f.Name(), err)
		}
	}
	return nil
}

// sharedUnderTmp are the directories the node helper binds back: those
// /tmp would hide. They are passed joined by ':' ("" for none).
func sharedUnderTmp(dirs []string) string {
	var out []string
	for _, d := range dirs {
		if strings.HasPrefix(filepath.Clean(d)+"/", "/tmp/") && filepath.Clean(d) != "/tmp" {
			out = append(out, filepath.Clean(d))
		}
	}
	return strings.Join(out, ":")
}

func splitShared(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ":")
}
