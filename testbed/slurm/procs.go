package slurm

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"prsh/testbed"
)

// The cluster's processes are those of its PID namespace, which every
// process started in it (daemons, slurmstepd, tasks, Command's commands)
// and all their descendants belong to, whatever they do to their
// environment; the kernel kills them all when init exits.

// Leftovers lists the live processes of the cluster other than init and
// its daemons (munged, slurmctld, the slurmd's): job steps' slurmstepd and
// tasks, and commands started with Command. Node is the node a process
// runs on (its UTS namespace is that node's slurmd's), "" for the
// controller.
func (c *Cluster) Leftovers() []testbed.Proc {
	procs := c.inNamespace()
	byPID := map[int]nsProc{}
	for _, p := range procs {
		byPID[p.PID] = p
	}
	nodeOf := map[string]string{} // UTS namespace → node
	for _, p := range procs {
		if node := slurmdNode(p.Cmdline); node != "" && c.isDaemon(p, byPID) {
			nodeOf[p.uts] = node
		}
	}
	var out []testbed.Proc
	for _, p := range procs {
		if !c.isDaemon(p, byPID) {
			out = append(out, testbed.Proc{PID: p.PID, Node: nodeOf[p.uts], Cmdline: p.Cmdline})
		}
	}
	return out
}

// WaitNoLeftovers polls Leftovers until none are left or grace has passed,
// and returns the survivors: steps take a moment to end after srun.
func (c *Cluster) WaitNoLeftovers(grace time.Duration) []testbed.Proc {
	deadline := time.Now().Add(grace)
	for {
		left := c.Leftovers()
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		time.Sleep(min(50*time.Millisecond, time.Until(deadline)))
	}
}

// isDaemon: init itself, or a process running one of the daemons'
// binaries whose parent is init or a daemon (slurmctld forks slurmscriptd).
// slurmstepd runs a binary of its own, so it never counts, though it
// becomes init's child when it detaches.
func (c *Cluster) isDaemon(p nsProc, byPID map[int]nsProc) bool {
	for {
		if p.PID == c.init.Process.Pid {
			return true
		}
		switch p.exe {
		case c.bins.munged, c.bins.slurmctld, c.bins.slurmd:
		default:
			return false
		}
		parent, ok := byPID[p.ppid]
		if !ok {
			return false
		}
		p = parent
	}
}

// slurmdNode is NAME in a slurmd's command line "… -N NAME".
func slurmdNode(cmdline string) string {
	f := strings.Fields(cmdline)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "-N" {
			return f[i+1]
		}
	}
	return ""
}

// nsProc is a live process of the cluster's PID namespace, seen from the
// host.
type nsProc struct {
	testbed.Proc
	ppid int
	exe  string // resolved path of its binary
	uts  string // readlink of /proc/PID/ns/uts
}

// inNamespace reads /proc for the live processes of the cluster's PID
// namespace. Any read error means the process is gone; zombies are dead.
func (c *Cluster) inNamespace() []nsProc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []nsProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := c.inspect(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

func (c *Cluster) inspect(pid int) (nsProc, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	ns, err := os.Readlink(dir + "/ns/pid")
	if err != nil || ns != c.pidNS {
		return nsProc{}, false
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return nsProc{}, false
	}
	state, ppid, ok := parseStat(stat)
	if !ok || state == 'Z' || state == 'X' {
		return nsProc{}, false
	}
	cmdline, _ := os.ReadFile(dir + "/cmdline")
	exe, _ := os.Readlink(dir + "/exe")
	uts, _ := os.Readlink(dir + "/ns/uts")
	return nsProc{
		Proc: testbed.Proc{PID: pid, Cmdline: testbed.FormatCmdline(cmdline)},
		ppid: ppid, exe: filepath.Clean(exe), uts: uts,
	}, true
}

// parseStat reads the state and the parent's pid from /proc/PID/stat,
// whose fields follow the command name in parentheses (which may itself
// contain ") ").
func parseStat(stat []byte) (state byte, ppid int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return f[0][0], ppid, err == nil
}
