package testbed

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Leftovers lists the live processes started through this testbed: every
// process, other than the caller's own, whose /proc/PID/environ carries
// PRSH_TESTBED_RUN=<this run's id>. That covers the node processes, their
// descendants, and the command run with Env() and its descendants.
// Zombies are skipped: they are dead and only wait for a reaper.
//
// A process that replaced its environment (env -i, execve with a fresh
// envp) escapes the scan; Close still kills the testbed's direct children,
// but not such a process's descendants. /proc/PID/environ shows the
// environment as it was at exec, so setenv/unsetenv do not matter.
func (c *Cluster) Leftovers() []Proc {
	return c.scan("")
}

// WaitNoLeftovers polls Leftovers until none are left or grace has passed,
// and returns the survivors. It lets a command's processes finish exiting
// (daemons noticing their lifeline closed) before calling them leftovers.
func (c *Cluster) WaitNoLeftovers(grace time.Duration) []Proc {
	deadline := time.Now().Add(grace)
	for {
		left := c.Leftovers()
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		time.Sleep(min(50*time.Millisecond, time.Until(deadline)))
	}
}

// KillLeftovers SIGKILLs every process Leftovers finds, repeating the scan
// so that children forked during a scan are caught as well.
func (c *Cluster) KillLeftovers() {
	c.killAll("")
}

// killAll kills the run's processes on node ("" = all) until a scan finds
// none, or gives up after a bounded number of rounds (a fork bomb).
func (c *Cluster) killAll(node string) {
	for round := 0; round < 50; round++ {
		procs := c.scan(node)
		if len(procs) == 0 {
			return
		}
		for _, p := range procs {
			c.kill(p.PID, node)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kill SIGKILLs pid if it still belongs to this run (and node). The
// os.Process holds a pidfd, so once the check passes, a recycled pid
// cannot be hit.
func (c *Cluster) kill(pid int, node string) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	defer p.Release()
	if _, ok := c.inspect(pid, node); ok {
		p.Signal(syscall.SIGKILL)
	}
}

// armKillAfter starts the KillAfter timer of a node.
func (c *Cluster) armKillAfter(n *node) {
	c.armFault(n, n.fault.KillAfter, "KillAfter: killing the node's processes", func() {
		n.dead.Store(true)
		c.killAll(n.Name)
	})
}

// armDropLinks starts the DropLinksAfter timer of a node.
func (c *Cluster) armDropLinks(n *node) {
	c.armFault(n, n.fault.DropLinksAfter, "DropLinksAfter: cutting the node's connections", func() {
		if err := dropLinks(n.Addr, n.Port); err != nil {
			c.logf("testbed: %s: %v", n.Name, err)
		}
	})
}

// DropLinks cuts the node's TCP connections now, as DropLinksAfter does
// on a timer: for a test that waits until the job runs before it cuts.
// The node's ssh sessions and processes live on.
func (c *Cluster) DropLinks(name string) error {
	n, ok := c.Node(name)
	if !ok {
		return fmt.Errorf("testbed: no node %q", name)
	}
	c.logf("testbed: %s: cutting the node's connections", name)
	return dropLinks(n.Addr, n.Port)
}

// armFault runs fire after d (if d > 0); the goroutine ends when the timer
// fires or the cluster closes.
func (c *Cluster) armFault(n *node, d time.Duration, what string, fire func()) {
	if d <= 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return
		}
		c.logf("testbed: %s: %s after %v", n.Name, what, d)
		fire()
	}()
}

// dropLinks destroys the TCP sockets bound to addr, but those of the ssh
// server on sshPort, in both directions.
func dropLinks(addr string, sshPort int) error {
	port := strconv.Itoa(sshPort)
	for _, side := range []string{"src", "dst"} {
		other := map[string]string{"src": "sport", "dst": "dport"}[side]
		out, err := exec.Command("ss", "-K", "-t", side, addr, "and", "not", other, "=", ":"+port).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ss -K: %v: %s", err, out)
		}
	}
	return nil
}

// scan reads /proc for this run's live processes on node ("" = any).
func (c *Cluster) scan(node string) []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		p, ok := c.inspect(pid, node)
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// inspect reports whether pid is a live process of this run (on node, if
// node is not ""). Any read error means "no": the process is gone or not
// ours to see.
func (c *Cluster) inspect(pid int, node string) (Proc, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	env, err := os.ReadFile(dir + "environ")
	if err != nil {
		return Proc{}, false
	}
	run, pnode := envLookup(env, EnvRun), envLookup(env, EnvNode)
	if run != c.runID || (node != "" && pnode != node) || zombie(dir) {
		return Proc{}, false
	}
	cmdline, err := os.ReadFile(dir + "cmdline")
	if err != nil {
		return Proc{}, false
	}
	return Proc{PID: pid, Node: pnode, Cmdline: FormatCmdline(cmdline)}, true
}

// envLookup finds KEY's value in a NUL-separated environ block.
func envLookup(env []byte, key string) string {
	prefix := []byte(key + "=")
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}

// zombie reads the state field of /proc/PID/stat, which follows the
// command name in parentheses (the name itself may contain ") ").
func zombie(dir string) bool {
	stat, err := os.ReadFile(dir + "stat")
	if err != nil {
		return true // gone
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}

// FormatCmdline words /proc/PID/cmdline as a command line.
func FormatCmdline(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	return strings.ReplaceAll(string(b), "\x00", " ")
}
