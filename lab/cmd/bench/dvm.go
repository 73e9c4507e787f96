package main

// bench dvm: small jobs one after another through a DVM (mpirun
// --dvm-start, then mpirun --dvm URI a job), beside a fresh mpirun of the
// same job on the same testbed nodes: issue 31's latency benchmark.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/testbed"
)

func dvmCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:  "dvm",
		Usage: "time small jobs through a DVM beside a fresh mpirun of the same job",
		Description: `Starts --nodes testbed nodes and runs --jobs jobs of /bin/true in a row
with a fresh mpirun each (one rank on every node, then one rank on one
node: -np 1), then starts a DVM on the same nodes (mpirun --dvm-start)
and runs the same jobs through it (mpirun --dvm URI). A job's time is
from its mpirun's start to its exit. The table has each case's median
and 99th percentile, and the ratio of the fresh mpirun's median to the
DVM's, and the CPU a job of the DVM's side (mpirun, the orteds and the
guards with the ranks they reaped, from /proc/PID/stat); the line under
it is this machine's own floor, a fork, exec and reap of /bin/true,
timed the same way.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 16, Usage: "testbed nodes"},
			&cli.IntFlag{Name: "jobs", Value: 200, Usage: "jobs in a row of each case"},
			&cli.BoolFlag{Name: "fresh", Value: true, Usage: "time the fresh mpirun too (--fresh=false: the DVM alone)"},
			&cli.StringFlag{Name: "table", Usage: "write the markdown table to this file (it is printed anyway)"},
		},
		Action: func(c *cli.Context) error { return benchDVMAction(c, std) },
	}
}

// dvmShape is a job's own arguments, the same fresh and through the DVM.
type dvmShape struct {
	name string
	args []string
}

func benchDVMAction(c *cli.Context, std stdio) error {
	nodes, jobs := c.Int("nodes"), c.Int("jobs")
	if nodes < 1 || jobs < 1 {
		return fmt.Errorf("--nodes and --jobs must be at least 1")
	}
	cl, err := testbed.Start(testbed.Config{Nodes: nodes, Env: []string{pathEnv()}})
	if err != nil {
		return err
	}
	defer cl.Close()
	env := append(append(os.Environ(), cl.Env()...), pathEnv())
	mpirun, err := testbed.LookPath("mpirun", testbed.EnvValue(env, "PATH"))
	if err != nil {
		return fmt.Errorf("our mpirun: %w (build it beside bench: make bench)", err)
	}
	run := func(args ...string) func() error { return func() error { return runQuiet(env, mpirun, args...) } }
	shapes := []dvmShape{{fmt.Sprintf("%d ranks, one a node", nodes), []string{"/bin/true"}}, {"1 rank", []string{"-np", "1", "/bin/true"}}}
	fresh := make([][]time.Duration, len(shapes))
	for i, s := range shapes {
		if !c.Bool("fresh") {
			break
		}
		if fresh[i], err = timeJobs(jobs, run(s.args...)); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "bench-dvm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	uri := filepath.Join(tmp, "dvm.uri")
	dvm, err := startDVM(env, mpirun, uri)
	if err != nil {
		return err
	}
	viaDVM, cpu := make([][]time.Duration, len(shapes)), make([]time.Duration, len(shapes))
	for i, s := range shapes {
		before := dvmCPU(cl, dvm.Process.Pid)
		if viaDVM[i], err = timeJobs(jobs, run(append([]string{"--dvm", uri}, s.args...)...)); err != nil {
			break
		}
		cpu[i] = (dvmCPU(cl, dvm.Process.Pid) - before) / time.Duration(jobs)
	}
	if stopErr := stopDVM(env, mpirun, uri, dvm); err == nil {
		err = stopErr
	}
	if err != nil {
		return err
	}
	floor, err := timeJobs(jobs, func() error { return exec.Command("/bin/true").Run() })
	if err != nil {
		return err
	}
	return writeDVMTable(c, std, shapes, fresh, viaDVM, cpu, floor)
}

// runQuiet runs mpirun with args; a failure is an error with its output.
func runQuiet(env []string, mpirun string, args ...string) error {
	cmd := exec.Command(mpirun, args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mpirun %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// timeJobs runs job n times in a row and returns each run's wall time.
func timeJobs(n int, job func() error) ([]time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := job(); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}

// startDVM starts a DVM on the cluster and waits until its URI file is
// written.
func startDVM(env []string, mpirun, uri string) (*exec.Cmd, error) {
	cmd := exec.Command(mpirun, "--dvm-start", "--dvm-uri", uri)
	var stderr bytes.Buffer
	cmd.Env, cmd.Stderr = env, &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(uri); err == nil {
			return cmd, nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("the DVM did not come up in a minute: %s", bytes.TrimSpace(stderr.Bytes()))
		}
	}
}

func stopDVM(env []string, mpirun, uri string, dvm *exec.Cmd) error {
	err := runQuiet(env, mpirun, "--dvm-stop", uri)
	if waitErr := dvm.Wait(); err == nil && waitErr != nil {
		err = fmt.Errorf("the DVM: %v", waitErr)
	}
	return err
}

// dvmCPU is the CPU time so far of the DVM's side: mpirun (root) and
// every process on the nodes (the orteds, the guards), with the children
// they reaped (the ranks).
func dvmCPU(cl *testbed.Cluster, root int) time.Duration {
	var ticks int64
	for _, p := range append(cl.Leftovers(), testbed.Proc{PID: root}) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state first: utime is the 12th
		for _, field := range f[11:min(15, len(f))] {            // utime, stime, cutime, cstime
			n, _ := strconv.ParseInt(field, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// percentile is the p-th (0 < p ≤ 1) of times, the nearest rank's.
func percentile(times []time.Duration, p float64) time.Duration {
	sorted := slices.Sorted(slices.Values(times))
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func millis(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func writeDVMTable(c *cli.Context, std stdio, shapes []dvmShape, fresh, viaDVM [][]time.Duration, cpu, floor []time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs of each in a row.\n\n", c.Int("jobs"))
	fmt.Fprintln(&b, "| job | fresh mpirun median | p99 | DVM median | p99 | fresh / DVM (medians) | DVM side's CPU a job |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
	for i, s := range shapes {
		dm, dp := millis(percentile(viaDVM[i], 0.5)), millis(percentile(viaDVM[i], 0.99))
		if len(fresh[i]) == 0 {
			fmt.Fprintf(&b, "| %s | | | %s | %s | | %s |\n", s.name, dm, dp, millis(cpu[i]))
			continue
		}
		fm := percentile(fresh[i], 0.5)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f× | %s |\n", s.name, millis(fm), millis(percentile(fresh[i], 0.99)),
			dm, dp, fm.Seconds()/percentile(viaDVM[i], 0.5).Seconds(), millis(cpu[i]))
	}
	fmt.Fprintf(&b, "\nThe machine's floor, fork+exec+reap of /bin/true: median %s, p99 %s.\n",
		millis(percentile(floor, 0.5)), millis(percentile(floor, 0.99)))
	fmt.Fprint(std.out, b.String())
	if path := c.String("table"); path != "" {
		return os.WriteFile(path, []byte(b.String()), 0o644)
	}
	return nil
}
