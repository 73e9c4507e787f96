package guard

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// JobVar names the variable the guard gives each rank: the number of its
// job on this guard. What the rank starts inherits it, so that a process
// that left the rank's group and came back to the guard is still known
// as the job's.
const JobVar = "PRSH_GUARD_JOB"

// started is a rank the guard started and has not reaped.
type started struct{ job, rank int }

// job is one job's share of the guard: its cgroup, and whether it is
// being killed.
type job struct {
	id       int
	cgroup   string // its cgroup's directory; "" for none
	cgroupFD int    // that directory open, to start ranks in it; -1: they start outside it
	killing  bool   // its kill has begun: no more starts
	starting int    // its starts under way
}

var errJobEnding = errors.New("the job is ending")

// jobFor is the job of start s, noted at its first start, with its
// cgroup opened; an error once it, or the guard, is being killed. Called
// under the node's lock.
func (g *node) jobFor(s RankStart) (*job, error) {
	if g.killing {
		return nil, errJobEnding
	}
	j := g.jobs[s.Job]
	if j == nil {
		j = &job{id: s.Job, cgroupFD: -1}
		if isJobCgroup(s.Cgroup) {
			j.cgroup = s.Cgroup
			if fd, err := unix.Open(s.Cgroup, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
				j.cgroupFD = fd
			}
		}
		g.jobs[s.Job] = j
	}
	if j.killing {
		return nil, errJobEnding
	}
	return j, nil
}

// startIn starts cmd with start, in job j's cgroup where it has one. A
// rank the kernel will not start there (clone3 refused, as under some
// seccomp filters) starts outside it, and so do the job's later ranks.
// It returns the command that started. Called without the lock: the
// cgroup stays open while j has a start under way (killRound).
func (g *node) startIn(j *job, cmd *exec.Cmd, start func(*exec.Cmd) error) (*exec.Cmd, error) {
	g.mu.Lock()
	fd := j.cgroupFD
	g.mu.Unlock()
	if fd < 0 {
		return cmd, start(cmd)
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	placedErr := start(cmd)
	if placedErr == nil {
		return cmd, nil
	}
	again := unplaced(cmd)
	if err := start(again); err != nil {
		return again, err // the program's own failure, most likely
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if j.cgroupFD == fd { // not closed by a start beside this one
		unix.Close(fd)
		j.cgroupFD = -1
	}
	return again, nil
}

// killJob kills job id: its cgroup, its ranks' process groups and every
// process that came back to the guard and is the job's, round after
// round until none is left, then removes its cgroup (as its daemon does:
// the second finds it gone, and one of them is left if the other dies).
// It runs beside the guard's service: the other jobs go on.
func (g *node) killJob(id int) {
	g.mu.Lock()
	j := g.jobs[id]
	begin := j != nil && !j.killing && !g.killing
	if begin {
		j.killing = true
	}
	g.mu.Unlock()
	if !begin {
		return
	}
	go func() {
		for g.killRound(j) {
			time.Sleep(5 * time.Millisecond)
		}
		g.mu.Lock()
		delete(g.jobs, id)
		fd := j.cgroupFD
		j.cgroupFD = -1
		g.mu.Unlock()
		removeCgroup(j.cgroup, fd)
	}()
}

// killRound SIGKILLs what is left of job j and says whether anything
// was. A job whose ranks all started in its cgroup is that cgroup (its
// kill takes everything they started, however it left their groups);
// any other is its ranks, by their record, and the processes that came
// back to the guard and are the job's (ofJob). Orphans are listed before
// the lock is taken: a rank started since is not among them.
func (g *node) killRound(j *job) bool {
	g.mu.Lock()
	contained := j.cgroupFD >= 0
	g.mu.Unlock()
	var orphans []int
	if !contained {
		orphans = orphaned()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	left := j.starting > 0 // to be killed once noted as a rank
	for pid, r := range g.ranks {
		if r.job == j.id {
			syscall.Kill(-pid, syscall.SIGKILL)
			left = true
		}
	}
	if j.cgroup != "" && cgroupPopulated(j.cgroup) { // mostly not: the daemon killed it as it asked
		j.killCgroup()
		left = left || contained
	}
	alone := len(g.jobs) == 1
	for _, pid := range orphans {
		if _, isRank := g.ranks[pid]; !isRank && ofJob(pid, j.id, alone) {
			killChild(pid)
			left = true
		}
	}
	return left
}

// orphaned lists the processes that came back to the guard, and its
// ranks started by its first thread: the kernel gives an orphan to its
// subreaper's first live thread, the leader, which a Go program keeps
// (kernel/exit.c, find_alive_thread). Reading that one list, not every
// thread's, was most of a guard's CPU at each job's end.
func orphaned() []int {
	pid := strconv.Itoa(os.Getpid())
	b, err := readProc("/proc/" + pid + "/task/" + pid + "/children")
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if child, err := strconv.Atoi(f); err == nil {
			out = append(out, child)
		}
	}
	return out
}

// ofJob says whether pid, a process that came back to the guard, is of
// job id: by the JobVar it inherited; without one (it cleared its
// environment, or is a zombie), when id is the guard's only job. Such a
// process is otherwise left until then, or until the guard's end: it may
// be a running job's.
func ofJob(pid, id int, alone bool) bool {
	if job, ok := inheritedJob(pid); ok {
		return job == id
	}
	return alone
}

// inheritedJob reads JobVar in pid's environment.
func inheritedJob(pid int) (int, bool) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return 0, false
	}
	for _, v := range bytes.Split(env, []byte{0}) {
		if val, ok := bytes.CutPrefix(v, []byte(JobVar+"=")); ok {
			job, err := strconv.Atoi(string(val))
			return job, err == nil
		}
	}
	return 0, false
}

// killCgroup kills everything in the job's cgroup, if it has one.
func (j *job) killCgroup() {
	if j.cgroup != "" {
		killCgroupDir(j.cgroup)
	}
}

// removeCgroup closes a job's cgroup directory (fd, if open) and removes
// the cgroup, once what was in it has died.
func removeCgroup(dir string, fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
	if dir != "" {
		removeCgroupDir(dir, 2*time.Second)
	}
}

// removeCgroups removes every job's cgroup, at the guard's end, when
// nothing is left under it: its daemon, killed outright, could not.
func (g *node) removeCgroups() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, j := range g.jobs {
		removeCgroup(j.cgroup, j.cgroupFD)
		j.cgroupFD = -1
	}
}
