package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"prsh/daemon/protocol/sim"
)

// The idle cost of a launch's processes, measured directly: during a job
// whose ranks sleep, the CPU (schedstat's run time of every thread) that
// each process of the job takes over a window, by kind of process, and
// the machine's runnable processes meanwhile. The difference between two
// whole launches' CPU is far below their noise; this is not.

const (
	idleRankSeconds = 600               // how long the ranks would sleep once all run
	idleReady       = 120 * time.Second // the longest wait for every rank to run
	idleSettle      = time.Second       // let the last starts' work end first
	idleWindow      = 8 * time.Second   // the window measured
)

// idleSample is the idle cost of each kind of process at one load.
type idleSample struct {
	load  float64 // runnable processes on the machine, mean over the window
	busy  int     // busy loops run beside
	kinds [sim.NumKinds]kindIdle
}

// kindIdle is what the processes of one kind took over the window.
type kindIdle struct {
	procs int
	cpu   time.Duration
	secs  float64 // the window
}

// share is the mean share of a core one process of the kind took.
func (k kindIdle) share() float64 {
	if k.procs == 0 || k.secs <= 0 {
		return 0
	}
	return k.cpu.Seconds() / (float64(k.procs) * k.secs)
}

// proc is one process as /proc/PID/stat has it.
type proc struct {
	pid, ppid int
	comm      string
}

// descendants lists root and every process below it.
func descendants(all []proc, root int) []proc {
	kids := map[int][]proc{}
	var top *proc
	for i, p := range all {
		kids[p.ppid] = append(kids[p.ppid], p)
		if p.pid == root {
			top = &all[i]
		}
	}
	if top == nil {
		return nil
	}
	out := []proc{*top}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i].pid]...)
	}
	return out
}

// kindsOf names the kind of each process of a job by its command name;
// an orted started by an orted is a guard (its fallback, when there is no
// prsh-guard), and a rank is whatever a guard started. Processes of no
// known kind (an exec in flight) are left out.
func kindsOf(job []proc) map[int]sim.Kind {
	comm := map[int]string{}
	for _, p := range job {
		comm[p.pid] = p.comm
	}
	isGuard := func(p proc) bool {
		return p.comm == "prsh-guard" || isOrted(p.comm) && isOrted(comm[p.ppid])
	}
	guards := map[int]bool{}
	for _, p := range job {
		guards[p.pid] = isGuard(p)
	}
	out := map[int]sim.Kind{}
	for _, p := range job {
		k, ok := kindOfComm(p.comm)
		switch {
		case guards[p.ppid]:
			k, ok = sim.KindRank, true
		case guards[p.pid]:
			k = sim.KindGuard
		}
		if ok {
			out[p.pid] = k
		}
	}
	return out
}

// isOrted says whether comm is the daemon's: orted, or orted-pmix (orted
// with the PMIx server).
func isOrted(comm string) bool { return comm == "orted" || comm == "orted-pmix" }

func kindOfComm(comm string) (sim.Kind, bool) {
	switch comm {
	case "mpirun":
		return sim.KindMpirun, true
	case "orted", "orted-pmix":
		return sim.KindOrted, true
	case "testbed-agent":
		return sim.KindAgent, true
	case "sh":
		return sim.KindShell, true
	case "prsh-guard":
		return sim.KindGuard, true
	}
	return 0, false
}

// readProcs lists every process of the machine; ones that end while it
// reads are left out.
func readProcs() []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

func readProc(pid int) (proc, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return proc{pid: pid, ppid: ppid, comm: s[open+1 : end]}, true
}

// taskCPU is the CPU every thread of pid has run so far (schedstat's
// first field), and whether pid was there to read.
func taskCPU(pid int) (time.Duration, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // a thread that ended: its time went with it
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += time.Duration(ns)
	}
	return sum, true
}

// runnable is the machine's count of runnable processes now (/proc/stat).
func runnable() (int, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "procs_running "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// watchIdle measures the idle cost of the job under root once ranks
// processes run: the CPU of each of its processes over idleWindow, and
// the runnable processes, sampled every 100 ms. Not all ranks running
// within idleReady is an error: the job's starts would count as idle.
// Once they run, ready lets them go on to sleep.
func watchIdle(root, ranks int, ready func()) (idleSample, error) {
	deadline := time.Now().Add(idleReady)
	for {
		up := countKind(kindsOf(descendants(readProcs(), root)), sim.KindRank)
		if up >= ranks {
			break
		}
		if time.Now().After(deadline) {
			return idleSample{}, fmt.Errorf("only %d of %d ranks ran within %v", up, ranks, idleReady)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ready()
	time.Sleep(idleSettle)
	kinds := kindsOf(descendants(readProcs(), root))
	t0, before := snapshot(kinds)
	var loads []float64
	for time.Since(t0) < idleWindow {
		if n, ok := runnable(); ok {
			loads = append(loads, float64(n))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t1, after := snapshot(kinds)
	s := idleSample{load: mean(loads)}
	for pid, c0 := range before {
		c1, ok := after[pid]
		if !ok {
			continue // ended within the window: not waiting
		}
		k := &s.kinds[kinds[pid]]
		k.procs++
		k.cpu += c1 - c0
		k.secs = t1.Sub(t0).Seconds()
	}
	return s, nil
}

// snapshot reads the CPU of these processes so far, and when: the middle
// of the reading, which takes a while on a loaded machine.
func snapshot(kinds map[int]sim.Kind) (time.Time, map[int]time.Duration) {
	start := time.Now()
	out := map[int]time.Duration{}
	for pid := range kinds {
		if t, ok := taskCPU(pid); ok {
			out[pid] = t
		}
	}
	return start.Add(time.Since(start) / 2), out
}

// endRanks ends the job's ranks: it kills the sleep each rank's shell
// waits for (processes of this job only), and the shell exits 0.
func endRanks(root int) {
	job := descendants(readProcs(), root)
	kinds := kindsOf(job)
	for _, p := range job {
		if k, ok := kinds[p.ppid]; ok && k == sim.KindRank && p.comm == "sleep" {
			syscall.Kill(p.pid, syscall.SIGTERM)
		}
	}
}

func countKind(kinds map[int]sim.Kind, want sim.Kind) int {
	n := 0
	for _, k := range kinds {
		if k == want {
			n++
		}
	}
	return n
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// busyLoops starts n processes that only spin, to raise the machine's
// load, and returns what stops them (by their own PIDs).
func busyLoops(n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for range n {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("bench: a busy loop: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// measureIdle runs a job of n nodes whose ranks sleep, with
// --idle-degree, and
// measures its processes' idle cost; busy loops run beside it.
func (b *bench) measureIdle(n, busy int) (idleSample, error) {
	hosts, err := b.hostfiles(n)
	if err != nil {
		return idleSample{}, err
	}
	stop, err := busyLoops(busy)
	if err != nil {
		return idleSample{}, err
	}
	defer stop()
	argv := b.ours[0].argv(hosts, n, min(max(1, b.c.Int("idle-degree")), n))
	// Each rank waits for the last one to start, then sleeps until
	// endRanks (or long after the measurement).
	script := fmt.Sprintf(`while [ ! -e "$0" ]; do sleep 0.2; done; sleep %d; exit 0`, idleRankSeconds)
	ready := filepath.Join(b.cluster.Dir(), fmt.Sprintf("idle-ready-%d", busy))
	argv = append(argv[:len(argv)-1], "/bin/sh", "-c", script, ready)
	var s idleSample
	var watchErr error
	_, err = b.launchWatched(argv, func(pid int) {
		s, watchErr = watchIdle(pid, n, func() { os.WriteFile(ready, nil, 0o644) })
		if watchErr != nil {
			syscall.Kill(pid, syscall.SIGTERM) // our mpirun: the job is of no use
			return
		}
		endRanks(pid)
	})
	if err = cmp.Or(watchErr, err); err != nil {
		return s, fmt.Errorf("bench: idle costs: %d nodes of sleep beside %d busy loops: %w", n, busy, err)
	}
	s.busy = busy
	return s, nil
}

// fitIdle makes each kind's idle cost a line in the load through the
// samples (the least-squares line; a flat one from a single sample), with
// neither the cost at no load nor the slope below zero.
func fitIdle(samples []idleSample) [sim.NumKinds]sim.IdleCost {
	var out [sim.NumKinds]sim.IdleCost
	for k := range out {
		var xs, ys []float64
		for _, s := range samples {
			if s.kinds[k].procs > 0 {
				xs, ys = append(xs, s.load), append(ys, s.kinds[k].share())
			}
		}
		out[k] = fitLine(xs, ys)
	}
	return out
}

func fitLine(xs, ys []float64) sim.IdleCost {
	if len(xs) == 0 {
		return sim.IdleCost{}
	}
	mx, my := mean(xs), mean(ys)
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	slope := 0.0
	if sxx > 0 {
		slope = max(0, sxy/sxx)
	}
	return sim.IdleCost{Share: max(0, my-slope*mx), PerLoad: slope}
}
