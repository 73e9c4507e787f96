//go:build linux

package pmi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"prsh/modex"
)

// These tests start real MPI programs on this machine, each with PMI_FD
// set to its end of a socketpair that Serve answers, over a memJob that
// plays the daemons (WIRE.md §13). Debian's MPICH speaks PMI-1;
// Slurm's libpmi2 speaks PMI-2 (exact frames) and has PMIX_Ring.

// TestMPICHHello runs an MPICH program (init, barrier, allreduce,
// finalize) with 1, 2 and 4 ranks on one node, and with 4 ranks that the
// mapping places on two nodes (MPICH then broadcasts once per node and
// fetches the other node's business cards).
func TestMPICHHello(t *testing.T) {
	bin := compileMPICH(t)
	for _, placement := range [][]int{{0}, {0, 0}, {0, 0, 0, 0}, {1, 1, 2, 2}} {
		n := len(placement)
		t.Run(placementName(placement), func(t *testing.T) {
			run := runJob(t, placement, nil, bin)
			run.mustSucceed(t)
			for r, out := range run.outs {
				if want := fmt.Sprintf("hello rank %d of %d: sum %d OK", r, n, n*(n-1)/2); !strings.Contains(out, want) {
					t.Errorf("rank %d printed %q, want %q", r, out, want)
				}
			}
		})
	}
}

// TestMPICHAbort: MPI_Abort(MPI_COMM_WORLD, 7) in rank 0 reaches
// Backend.Abort with status 7 while the connection stays open; the test's
// "daemon" then kills the job, and Serve reports the abort.
func TestMPICHAbort(t *testing.T) {
	bin := compileMPICH(t)
	run := runJob(t, []int{0, 0}, nil, bin, "abort")
	if !errors.Is(run.served[0], ErrAborted) {
		t.Errorf("rank 0: Serve returned %v, want ErrAborted", run.served[0])
	}
	run.job.mu.Lock()
	defer run.job.mu.Unlock()
	if len(run.job.aborts) != 1 || run.job.aborts[0] != 7 {
		t.Errorf("aborts = %v, want [7]", run.job.aborts)
	}
	for r, err := range run.exits {
		if err == nil {
			t.Errorf("rank %d exited normally, want killed", r)
		}
	}
}

// TestSlurmLibPMI2 runs a program against Slurm's libpmi2: KVS across the
// ranks, the mapping, a node attribute waited for, and PMIX_Ring.
func TestSlurmLibPMI2(t *testing.T) {
	bin := compileLibPMI2(t, "pmi2client.c")
	for _, n := range []int{1, 2, 4} {
		placement := make([]int, n)
		t.Run(placementName(placement), func(t *testing.T) {
			// every other rank asks for the node attribute before rank 0 puts it
			hold := func(j *memJob) { j.holdPuts = n - 1 }
			run := runJob(t, placement, hold, bin, modex.ProcessMapping(placement))
			run.mustSucceed(t)
			for r, out := range run.outs {
				if want := fmt.Sprintf("pmi2 rank %d of %d: OK", r, n); !strings.Contains(out, want) {
					t.Errorf("rank %d printed %q, want %q", r, out, want)
				}
			}
			run.job.mu.Lock()
			defer run.job.mu.Unlock()
			if run.job.parked != n-1 {
				t.Errorf("%d info-getnodeattr calls waited for the put, want %d", run.job.parked, n-1)
			}
		})
	}
}

func compileMPICH(t *testing.T) string {
	if testing.Short() {
		t.Skip("starts MPI programs")
	}
	mpicc, err := exec.LookPath("mpicc.mpich") // plain mpicc may be Open MPI's
	if err != nil {
		t.Skip("mpicc.mpich not found: apt-get install -y mpich libmpich-dev")
	}
	return compile(t, mpicc, "hello.c")
}

func compile(t *testing.T, cc, src string, libs ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(src, ".c"))
	args := append([]string{"-O1", "-o", bin, filepath.Join("testdata", src)}, libs...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
	}
	return bin
}

func placementName(placement []int) string {
	nodes := map[int]bool{}
	for _, n := range placement {
		nodes[n] = true
	}
	return fmt.Sprintf("%d_ranks_on_%d_nodes", len(placement), len(nodes))
}

// jobRun is the outcome of one job.
type jobRun struct {
	job    *memJob
	outs   []string // what each rank printed
	exits  []error  // each rank's exit
	served []error  // what Serve returned for each rank
}

func (run jobRun) mustSucceed(t *testing.T) {
	t.Helper()
	for r := range run.outs {
		if run.exits[r] != nil {
			t.Errorf("rank %d: %v\n%s", r, run.exits[r], run.outs[r])
		}
		if run.served[r] != nil {
			t.Errorf("rank %d: Serve: %v", r, run.served[r])
		}
	}
}

// runJob starts one copy of argv per rank on this machine, placement[r]
// being the node of rank r, and serves their PMI connections until all
// have exited. Like a daemon, it kills the job when a rank aborts. tune,
// if not nil, adjusts the job before the ranks start.
func runJob(t *testing.T, placement []int, tune func(*memJob), argv ...string) jobRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := len(placement)
	run := jobRun{outs: make([]string, n), exits: make([]error, n), served: make([]error, n),
		job: newMemJob(JobInfo{Size: n, KVSName: "kvs_prsh_test", UniverseSize: n,
			ProcessMapping: modex.ProcessMapping(placement)}, placement)}
	run.job.onAbort = func(int) { cancel() } // exec.CommandContext kills the ranks
	if tune != nil {
		tune(run.job)
	}
	outs := make([]bytes.Buffer, n)
	taps := make([]*tap, n)
	var cmds []*exec.Cmd
	var wg sync.WaitGroup
	start := time.Now()
	for r := range n {
		cmd, conn := startRank(t, ctx, argv, r, n, &outs[r])
		cmds, taps[r] = append(cmds, cmd), &tap{Conn: conn}
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.served[r] = Serve(ctx, taps[r], run.job.rank(r), testLogger(t))
		}()
	}
	for r, cmd := range cmds {
		run.exits[r] = cmd.Wait()
		run.outs[r] = outs[r].String()
	}
	cancel() // the ranks are gone: release a Serve still holding an aborted rank
	wg.Wait()
	t.Logf("%d ranks of %s done in %v; rank 0 sent:\n%s", n, filepath.Base(argv[0]),
		time.Since(start).Round(time.Millisecond), taps[0].requests())
	return run
}

// startRank starts one rank with the child end of a socketpair as fd 3.
func startRank(t *testing.T, ctx context.Context, argv []string, r, n int, out *bytes.Buffer) (*exec.Cmd, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "pmi-server"), os.NewFile(uintptr(fds[1]), "pmi-client")
	defer theirs.Close()
	conn, err := net.FileConn(ours) // a duplicate: ours can go
	ours.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{theirs} // fd 3 in the child
	cmd.Env = append(withoutPMI(os.Environ()), "PMI_FD=3", "PMI_RANK="+strconv.Itoa(r),
		"PMI_SIZE="+strconv.Itoa(n), "PMI_JOBID=prsh-test")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return cmd, conn
}

// withoutPMI drops inherited PMI settings; PMI_VERSION in particular
// would change what MPICH asks for (WIRE.md §1).
func withoutPMI(env []string) []string {
	var keep []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PMI_") && !strings.HasPrefix(kv, "PMI2_") {
			keep = append(keep, kv)
		}
	}
	return keep
}

// tap records what the client sends.
type tap struct {
	net.Conn
	mu   sync.Mutex
	sent bytes.Buffer
}

func (c *tap) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.sent.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

// requests lists the recorded requests, one per line, long values cut.
func (c *tap) requests() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sb strings.Builder
	rd := newReader(bytes.NewReader(c.sent.Bytes()))
	for {
		req, err := rd.next()
		if err != nil {
			return sb.String()
		}
		fmt.Fprintf(&sb, "  PMI-%d %s", req.proto, req.cmd)
		for _, it := range req.items {
			fmt.Fprintf(&sb, " %s=%s", it.key, clip(it.value))
		}
		sb.WriteByte('\n')
	}
}
