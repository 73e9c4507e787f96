package guard

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A Cgroup is a cgroup v2 of the daemon's own, below the one it runs in,
// that holds every guard and rank of one job on this node: whatever a
// rank starts is born in it, and cgroup.kill ends all of it at once, as
// Slurm's cgroup tracking does. Where cgroup v2 is not mounted, not
// delegated to the user (mkdir fails), or too old for cgroup.kill (Linux
// before 5.14) or for starting a process in a cgroup (before 5.7), the
// daemon does without, and the guards alone keep anything from escaping.
type Cgroup struct {
	dir string
	fd  *os.File // the directory, to start the guards in it
}

// cgroupPrefix names the job cgroups; only a directory so named is ever
// killed or removed.
const cgroupPrefix = "prsh-job-"

// NewCgroup makes the job's cgroup below the caller's own. Whether the
// kernel can start a process in it (Linux 5.7 and later, clone3 not
// filtered) is found by the first guard started in it: a guard that
// cannot be starts outside it (Guard.Start), and the daemon then does
// without the cgroup. A probe of its own would cost every node and job a
// fork.
func NewCgroup() (*Cgroup, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(filepath.Join(mount, own), cgroupPrefix)
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 not delegated here: %w", err)
	}
	c := &Cgroup{dir: dir}
	if _, err := os.Stat(c.file("cgroup.kill")); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("cgroup v2 without cgroup.kill (Linux < 5.14): %w", err)
	}
	if c.fd, err = os.Open(dir); err != nil {
		os.Remove(dir)
		return nil, err
	}
	return c, nil
}

func (c *Cgroup) file(name string) string { return filepath.Join(c.dir, name) }

// Dir is the cgroup's directory.
func (c *Cgroup) Dir() string { return c.dir }

// Place makes cmd start in the cgroup.
func (c *Cgroup) Place(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(c.fd.Fd())
}

// OOMKills is how many processes in the cgroup, or below it, the
// kernel's OOM killer has killed (memory.events' oom_kill). It fails
// where the memory controller is not enabled for the cgroup: no
// memory.events.
func (c *Cgroup) OOMKills() (int, error) {
	b, err := os.ReadFile(c.file("memory.events"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strconv.Atoi(n)
		}
	}
	return 0, fmt.Errorf("no oom_kill in %s", c.file("memory.events"))
}

// unplaced is cmd, not yet started, as it was before Place.
func unplaced(cmd *exec.Cmd) *exec.Cmd {
	attr := *cmd.SysProcAttr
	attr.UseCgroupFD, attr.CgroupFD = false, 0
	return &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin,
		Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles, SysProcAttr: &attr}
}

// Kill kills every process in the cgroup.
func (c *Cgroup) Kill() error {
	return os.WriteFile(c.file("cgroup.kill"), []byte("1"), 0)
}

// Remove kills what is left and removes the cgroup once it is empty,
// waiting at most wait for the kill to complete.
func (c *Cgroup) Remove(wait time.Duration) error {
	defer c.fd.Close()
	if !strings.HasPrefix(filepath.Base(c.dir), cgroupPrefix) {
		return fmt.Errorf("not a job cgroup: %s", c.dir)
	}
	c.Kill()
	deadline := time.Now().Add(wait)
	pause := 100 * time.Microsecond // the kill completes within a scheduling round, mostly
	for {
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) { // the guards' last removed it
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// leaveCgroup moves the guard out of the job's cgroup, into the one
// above, and removes the job's cgroup if that leaves it empty: the last
// guard out removes it when its daemon died and could not.
func leaveCgroup() {
	mount, err1 := cgroup2Mount()
	own, err2 := ownCgroup()
	if err1 != nil || err2 != nil || !strings.HasPrefix(filepath.Base(own), cgroupPrefix) {
		return
	}
	above := filepath.Join(mount, filepath.Dir(own), "cgroup.procs")
	if os.WriteFile(above, []byte("0"), 0) == nil { // "0": the writer
		os.Remove(filepath.Join(mount, own))
	}
}

// cgroup2Mount finds where cgroup v2 is mounted (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid system).
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if ok && strings.HasPrefix(post, "cgroup2 ") && len(fields) >= 5 && fields[3] == "/" {
			return fields[4], nil
		}
	}
	return "", errors.New("cgroup v2 is not mounted")
}

// ownCgroup is the caller's cgroup v2 path, from its "0::" line.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(path, "/") {
			return path, nil
		}
	}
	return "", errors.New("not in a cgroup v2")
}
