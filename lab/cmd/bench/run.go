package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// launch runs one launch to completion and returns its wall seconds and
// the CPU seconds of all its processes. A launch that fails or leaves
// processes running is an error naming the cause.
func (b *bench) launch(argv []string) (wall, cpu float64, err error) {
	r, err := b.launchWatched(argv, nil)
	return r.wall, r.cpu, err
}

// launchRun is what one launch measured.
type launchRun struct {
	wall, cpu  float64     // seconds
	milestones launchTimes // ours with --report-launch-times; else none reached
}

// launchWatched is launch with watch (if not nil) run beside the launch,
// given mpirun's PID; the launch is done once both are.
func (b *bench) launchWatched(argv []string, watch func(pid int)) (r launchRun, err error) {
	sample, err := b.meter.start()
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Duration("timeout"))
	defer cancel()
	full := sample.wrap(argv)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	var stderr bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = b.env, b.stdout, &stderr, time.Second
	if b.c.Bool("verbose") {
		fmt.Fprintf(b.std.err, "bench: %s\n", strings.Join(argv, " "))
	}
	start := time.Now()
	runErr := cmd.Start()
	if runErr == nil {
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			if watch != nil {
				watch(cmd.Process.Pid) // the cgroup's shell execs mpirun in place
			}
		}()
		runErr = cmd.Wait()
		<-watched
	}
	r.wall = time.Since(start).Seconds()
	left := b.cluster.WaitNoLeftovers(10 * time.Second)
	if len(left) > 0 {
		b.cluster.KillLeftovers()
	}
	r.cpu = sample.stop()
	r.milestones = parseLaunchTimes(stderr.String())
	switch {
	case ctx.Err() != nil:
		return r, fmt.Errorf("%s: no end after --timeout %v", filepath.Base(argv[0]), b.c.Duration("timeout"))
	case runErr != nil:
		return r, fmt.Errorf("%s: %v: %s", filepath.Base(argv[0]), runErr, lastLine(stderr.String()))
	case len(left) > 0:
		return r, fmt.Errorf("%s left %d processes running, e.g. on %s: %s",
			filepath.Base(argv[0]), len(left), left[0].Node, left[0].Cmdline)
	}
	return r, nil
}

// lastLine is the launcher's last line on stderr, its failure's: our
// mpirun's launch times, which it prints after the failure, are passed
// over.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		if !strings.HasPrefix(lines[i], launchTimesPrefix) {
			return lines[i]
		}
	}
	return lines[0]
}

// cpuMeter measures the CPU of whole launches: from a cgroup of its own
// per launch when it can make one (every process of the launch, orphans
// included), else from getrusage of reaped children. With native ssh the
// nodes' processes are the testbed's children and its ssh servers run in
// this process, so both getrusage counters are the measure.
type cpuMeter struct {
	dir    string // our cgroup directory; "" for getrusage
	usage  func(dir string) (time.Duration, error)
	native bool
	serial int
}

func newCPUMeter(native bool) cpuMeter {
	m := cpuMeter{native: native}
	if native {
		return m
	}
	for _, h := range cgroupHierarchies {
		dir := filepath.Join(h.root, fmt.Sprintf("prsh-bench-%d", os.Getpid()))
		if _, err := os.Stat(filepath.Join(h.root, h.probe)); err != nil {
			continue
		}
		if os.Mkdir(dir, 0o755) == nil {
			m.dir, m.usage = dir, h.usage
			return m
		}
	}
	return m
}

// source names where the CPU figures come from.
func (m *cpuMeter) source() string {
	if m.dir != "" {
		return "cgroup"
	}
	return "getrusage"
}

func (m *cpuMeter) close() {
	if m.dir != "" {
		os.Remove(m.dir)
	}
}

// cgroupHierarchies are where a cgroup with CPU accounting may be made:
// cgroup v1's cpuacct, cgroup v2 mounted alone or beside v1.
var cgroupHierarchies = []struct {
	root, probe string
	usage       func(dir string) (time.Duration, error)
}{
	{"/sys/fs/cgroup/cpuacct", "cpuacct.usage", cpuacctUsage},
	{"/sys/fs/cgroup", "cgroup.controllers", cpuStatUsage},
	{"/sys/fs/cgroup/unified", "cgroup.controllers", cpuStatUsage},
}

func cpuacctUsage(dir string) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return time.Duration(ns), err
}

func cpuStatUsage(dir string) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", dir)
}

// cpuSample is one launch's measurement in progress.
type cpuSample struct {
	m              *cpuMeter
	dir            string // the launch's cgroup, or ""
	self, children time.Duration
}

func (m *cpuMeter) start() (cpuSample, error) {
	s := cpuSample{m: m, self: rusage(syscall.RUSAGE_SELF), children: rusage(syscall.RUSAGE_CHILDREN)}
	if m.dir == "" {
		return s, nil
	}
	m.serial++
	s.dir = filepath.Join(m.dir, strconv.Itoa(m.serial))
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return s, fmt.Errorf("bench: cgroup: %w", err)
	}
	return s, nil
}

// wrap makes argv join the launch's cgroup before it starts, so that no
// process of the launch escapes it.
func (s cpuSample) wrap(argv []string) []string {
	if s.dir == "" {
		return argv
	}
	join := `echo $$ > "$0" && exec "$@"`
	return append([]string{"/bin/sh", "-c", join, filepath.Join(s.dir, "cgroup.procs")}, argv...)
}

// stop returns the launch's CPU seconds, once its cgroup is empty.
func (s cpuSample) stop() float64 {
	if s.dir == "" {
		cpu := rusage(syscall.RUSAGE_CHILDREN) - s.children
		if s.m.native {
			cpu += rusage(syscall.RUSAGE_SELF) - s.self
		}
		return cpu.Seconds()
	}
	defer os.Remove(s.dir)
	waitEmpty(s.dir, 10*time.Second)
	cpu, err := s.m.usage(s.dir)
	if err != nil {
		return -1
	}
	return cpu.Seconds()
}

// waitEmpty waits until no process is left in the cgroup dir, or d.
func waitEmpty(dir string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(procs)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
