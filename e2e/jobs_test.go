package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// sequentialJobs is TestJobsInSequence's count; 0 means 200 without the
// race detector (make test's plain line) and 20 with it.
var sequentialJobs = flag.Int("jobs.sequential", 0, "jobs run one after another by TestJobsInSequence")

// jobScript prints "JOB RANK" from every rank.
const jobScript = `echo "$JOB $PRSH_RANK"`

// jobRun starts one job of np ranks on the cluster's nodes, each rank
// printing its job id and rank, and returns what mpirun did. It does not
// use t: jobs run in goroutines.
func jobRun(c *testbed.Cluster, env []string, job, np int) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "mpirun"), "--spawn-degree", "2",
		"-np", itoa(np), "-x", "JOB="+itoa(job), "sh", "-c", jobScript)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return result{}, fmt.Errorf("job %d hung; stderr:\n%s", job, stderr.String())
	}
	res := result{status: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if err != nil && res.status < 0 {
		return res, fmt.Errorf("job %d: %v", job, err)
	}
	return res, nil
}

// checkJob fails the test unless the job ended 0, said nothing on stderr
// and printed exactly its own np lines.
func checkJob(t *testing.T, job, np int, res result) {
	t.Helper()
	if res.status != 0 || res.stderr != "" {
		t.Errorf("job %d: exit %d; stderr:\n%s", job, res.status, res.stderr)
	}
	want := make([]string, np)
	for r := range np {
		want[r] = fmt.Sprintf("%d %d", job, r)
	}
	got := lines(res.stdout)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("job %d printed:\n%s\nwant one line \"%d RANK\" for each of its %d ranks", job, res.stdout, job, np)
	}
}

// TestManyJobsAtOnce: 20 jobs at once on the same nodes all run right,
// and leave nothing behind.
func TestManyJobsAtOnce(t *testing.T) {
	const jobs, np = 20, 8
	c, env := leakCluster(t, 4)
	before := takeSnapshot(t, c, env)
	results := make([]result, jobs)
	errs := make([]error, jobs)
	var wg sync.WaitGroup
	for j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[j], errs[j] = jobRun(c, env, j, np)
		}()
	}
	wg.Wait()
	for j := range jobs {
		if errs[j] != nil {
			t.Errorf("%v", errs[j])
			continue
		}
		checkJob(t, j, np, results[j])
	}
	before.checkNoLeaks(t)
}

// TestJobsInSequence: jobs one after another, as a regression loop runs
// them, all right and leaving nothing behind.
func TestJobsInSequence(t *testing.T) {
	count := *sequentialJobs
	if count == 0 {
		count = 200
		if raceEnabled {
			count = 20
		}
	}
	const np = 4
	c, env := leakCluster(t, 4)
	before := takeSnapshot(t, c, env)
	for j := range count {
		res, err := jobRun(c, env, j, np)
		if err != nil {
			t.Fatal(err)
		}
		checkJob(t, j, np, res)
		if t.Failed() {
			t.Fatalf("stopped at job %d of %d", j, count)
		}
	}
	before.checkNoLeaks(t)
}

// TestInterruptOneJob: Ctrl-C to one of several jobs on the same nodes
// ends that one (exit 130, the one line saying so, none of its ranks'
// output: they were stopped before their release) and touches no other:
// they finish right, each with its own lines and nothing on stderr.
func TestInterruptOneJob(t *testing.T) {
	const jobs, np, victim = 4, 4, 1
	c, env := leakCluster(t, 4)
	before := takeSnapshot(t, c, env)
	release := filepath.Join(t.TempDir(), "go")
	script := `touch "$MARKS/$PRSH_RANK"; while [ ! -e "$GO" ]; do sleep 0.1; done; ` + jobScript
	cmds := make([]*exec.Cmd, jobs)
	stderrs := make([]*lockedBuffer, jobs)
	stdouts := make([]*os.File, jobs)
	for j := range jobs {
		out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { out.Close() })
		stdouts[j] = out
		cmds[j], stderrs[j], _ = startedTo(t, c, out, np, "--spawn-degree", "2", "-np", itoa(np),
			"-x", "JOB="+itoa(j), "-x", "GO="+release, "sh", "-c", script)
	}
	cmds[victim].Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmds[victim]); status != 130 {
		t.Errorf("interrupted job: exit %d, want 130; stderr:\n%s", status, stderrs[victim])
	}
	checkOneLine(t, stderrs[victim].String(), `^mpirun: caught SIGINT, terminating the job$`)
	stdouts[victim].Close()
	if out, _ := os.ReadFile(stdouts[victim].Name()); len(out) > 0 {
		t.Errorf("interrupted job printed:\n%s", out)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for j := range jobs {
		if j == victim {
			continue
		}
		status := waitExit(t, cmds[j])
		stdouts[j].Close()
		out, _ := os.ReadFile(stdouts[j].Name())
		checkJob(t, j, np, result{status: status, stdout: string(out), stderr: stderrs[j].String()})
	}
	before.checkNoLeaks(t)
}

// leakCluster starts a cluster whose processes (and mpirun) use a
// temporary directory of the test's own, and returns mpirun's environment.
func leakCluster(t *testing.T, nodes int) (*testbed.Cluster, []string) {
	t.Helper()
	tmp := t.TempDir()
	c := cluster(t, testbed.Config{Nodes: nodes, Slots: 2, Env: []string{"TMPDIR=" + tmp}})
	env := append(os.Environ(), c.Env()...)
	env = append(env, "TMPDIR="+tmp)
	// One job first, so that what a first job sets up for good (the
	// per-boot topology cache, the test process's lazily opened files)
	// is in the snapshot taken after it.
	res, err := jobRun(c, env, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	checkJob(t, 0, 2, res)
	return c, env
}

// snapshot is what the test process, the nodes' addresses and the jobs'
// TMPDIR hold between jobs.
type snapshot struct {
	c       *testbed.Cluster
	fds     map[string]string // fd number → what it is
	sockets []string          // sockets on the nodes' addresses held by a process
	tmp     []string          // names in TMPDIR
	tmpDir  string
}

func takeSnapshot(t *testing.T, c *testbed.Cluster, env []string) snapshot {
	t.Helper()
	if left := c.WaitNoLeftovers(30 * time.Second); len(left) > 0 {
		t.Fatalf("processes left running: %+v", left)
	}
	s := snapshot{c: c, fds: openFDs(t)}
	for _, kv := range env {
		if dir, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			s.tmpDir = dir
		}
	}
	s.sockets = nodeSockets(t, c)
	s.tmp = dirNames(t, s.tmpDir)
	return s
}

// checkNoLeaks compares the state after the jobs with the snapshot: no
// process left, no more open descriptors in the test process (the
// testbed's ssh servers), no socket on the nodes' addresses but the ssh
// listeners, no new file in TMPDIR. Descriptors and sockets close as the
// servers' goroutines and the kernel catch up, so they are given time.
func (s snapshot) checkNoLeaks(t *testing.T) {
	t.Helper()
	if left := s.c.WaitNoLeftovers(30 * time.Second); len(left) > 0 {
		s.c.KillLeftovers()
		t.Errorf("processes left running: %+v", left)
	}
	var fds map[string]string
	var sockets []string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		fds, sockets = openFDs(t), nodeSockets(t, s.c)
		if (len(fds) <= len(s.fds) && len(sockets) <= len(s.sockets)) || time.Now().After(deadline) {
			break
		}
	}
	if len(fds) > len(s.fds) {
		for fd, what := range fds {
			if s.fds[fd] != what {
				t.Errorf("descriptor %s (%s) open in the test process after the jobs", fd, what)
			}
		}
	}
	if len(sockets) > len(s.sockets) {
		for _, sock := range sockets {
			if !slices.Contains(s.sockets, sock) {
				t.Errorf("socket left on a node's address: %s", sock)
			}
		}
	}
	for _, name := range dirNames(t, s.tmpDir) {
		if !slices.Contains(s.tmp, name) {
			t.Errorf("left in TMPDIR: %s", name)
		}
	}
}

// openFDs lists the test process's descriptors and what they point to.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if what, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil {
			out[e.Name()] = what
		}
	}
	return out
}

// nodeSockets lists the TCP sockets in /proc/net/tcp with an end on one of
// the cluster's node addresses and an owner (inode not 0: not a socket
// the kernel finishes alone, as in TIME_WAIT), as "local remote state".
func nodeSockets(t *testing.T, c *testbed.Cluster) []string {
	t.Helper()
	ips := map[netip.Addr]bool{}
	for _, n := range c.Nodes() {
		ips[netip.MustParseAddr(n.Addr)] = true
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[9] == "0" {
			continue
		}
		local, remote := procAddr(fields[1]), procAddr(fields[2])
		if ips[local.Addr()] || ips[remote.Addr()] {
			out = append(out, local.String()+" "+remote.String()+" "+fields[3])
		}
	}
	slices.Sort(out)
	return out
}

// procAddr parses /proc/net/tcp's "0100007F:1F90".
func procAddr(s string) netip.AddrPort {
	h, p, _ := strings.Cut(s, ":")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 4 {
		return netip.AddrPort{}
	}
	var port uint16
	fmt.Sscanf(p, "%x", &port)
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{b[3], b[2], b[1], b[0]}), port)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
