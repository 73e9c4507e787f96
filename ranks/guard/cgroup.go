package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"prsh/internal/cgroupfs"
)

// A Cgroup is a cgroup v2 of the daemon's own, below the one it runs in,
// that holds every rank of one job on this node: the guard starts them
// in it (RankStart.Cgroup), whatever a rank starts is born in it, and
// cgroup.kill ends all of it at once, as Slurm's cgroup tracking does.
// The guard itself runs outside it, in the daemon's cgroup: a DVM's
// guard outlives its jobs. Where cgroup v2 is not mounted, not delegated
// to the user (mkdir fails), or too old for cgroup.kill (Linux before
// 5.14), the daemon does without, and the guard alone keeps anything
// from escaping.
type Cgroup struct {
	dir string
}

// cgroupPrefix names the job cgroups; only a directory so named is ever
// killed or removed.
const cgroupPrefix = "prsh-job-"

// NewCgroup makes a job's cgroup below the caller's own. Whether the
// kernel can start a process in it (clone3 into a cgroup, not filtered)
// is found by the guard at the job's first rank: a rank that cannot be
// starts outside it (job.startIn). A probe of its own would cost every
// node and job a fork.
func NewCgroup() (*Cgroup, error) {
	base, err := ownCgroupDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(base, cgroupPrefix)
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 not delegated here: %w", err)
	}
	c := &Cgroup{dir: dir}
	if _, err := os.Stat(c.file("cgroup.kill")); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("cgroup v2 without cgroup.kill (Linux < 5.14): %w", err)
	}
	return c, nil
}

func (c *Cgroup) file(name string) string { return filepath.Join(c.dir, name) }

// Dir is the cgroup's directory.
func (c *Cgroup) Dir() string { return c.dir }

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
func (c *Cgroup) Kill() error { return killCgroupDir(c.dir) }

// Remove kills what is left and removes the cgroup once it is empty,
// waiting at most wait for the kill to complete.
func (c *Cgroup) Remove(wait time.Duration) error { return removeCgroupDir(c.dir, wait) }

// isJobCgroup says whether dir may be killed and removed as a job's
// cgroup: only a directory so named ever is.
func isJobCgroup(dir string) bool {
	return dir != "" && strings.HasPrefix(filepath.Base(dir), cgroupPrefix)
}

func killCgroupDir(dir string) error {
	if !isJobCgroup(dir) {
		return fmt.Errorf("not a job cgroup: %s", dir)
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
}

// cgroupPopulated says whether a process is left in cgroup dir (or below
// it): cgroup.events' populated; a cgroup gone holds none.
func cgroupPopulated(dir string) bool {
	b, err := readProc(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	return !strings.Contains(string(b), "populated 0")
}

// removeCgroupDir removes job cgroup dir, killing what is left in it
// first if anything is (an empty one, as at most jobs' ends, is removed
// at once), and waiting at most wait for the kill to complete; one
// already gone is removed.
func removeCgroupDir(dir string, wait time.Duration) error {
	if !isJobCgroup(dir) {
		return fmt.Errorf("not a job cgroup: %s", dir)
	}
	deadline := time.Now().Add(wait)
	pause := 100 * time.Microsecond // the kill completes within a scheduling round, mostly
	for killed := false; ; {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) { // the guard removed it
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		if !killed {
			killCgroupDir(dir)
			killed = true
			continue
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// ownCgroupDir is the directory of the caller's cgroup v2, found once: a
// DVM's daemon makes a job cgroup in it for every job, and reading the
// mount table each time was a tenth of its CPU per job.
var ownCgroupDir = sync.OnceValues(func() (string, error) {
	i := slices.IndexFunc(cgroupfs.Mounts(), func(m cgroupfs.Mount) bool { return m.V2 })
	if i < 0 {
		return "", errors.New("cgroup v2 is not mounted")
	}
	own, ok := cgroupfs.Own()[""]
	if !ok || !strings.HasPrefix(own, "/") {
		return "", errors.New("not in a cgroup v2")
	}
	return filepath.Join(cgroupfs.Mounts()[i].Dir, own), nil
})
