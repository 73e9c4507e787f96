package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"prsh/modex"
	"prsh/modex/pmi"
)

// fakeJob plays the daemons of an n-rank job inside the test: a store
// committed by fences, and fence, allgather and ring rounds that complete
// once every rank has entered. Each rank is a real Client talking to its
// own pmi.Serve over a socket pair, as under mpirun.
type fakeJob struct {
	n int

	mu        sync.Mutex
	store     map[string]string
	pending   []map[string]string // per rank: puts since its last fence
	round     *round
	entered   int // ranks inside the current round, for tests to watch
	aborts    []int
	finalized int
	kill      []context.CancelFunc // per rank: what "killing" it does to its Serve

	spawner  string               // JobInfo.Spawner of every rank
	spawns   []modex.SpawnRequest // what Spawn was asked
	spawnErr error                // when set, Spawn fails with it
	names    map[string]string    // the name service
}

// round is one collective in progress.
type round struct {
	kind string
	in   []any // per rank: what it gave
	got  int
	done chan struct{} // closed when all n ranks are in
}

// enter adds rank's contribution to the current round of kind and waits
// for the others. in is not written once done is closed.
func (j *fakeJob) enter(ctx context.Context, kind string, rank int, x any) ([]any, error) {
	j.mu.Lock()
	if j.round == nil {
		j.round = &round{kind: kind, in: make([]any, j.n), done: make(chan struct{})}
	}
	r := j.round
	if r.kind != kind {
		j.mu.Unlock()
		return nil, fmt.Errorf("rank %d entered %s during %s", rank, kind, r.kind)
	}
	r.in[rank] = x
	j.entered++
	if r.got++; r.got == j.n {
		if kind == "fence" {
			for _, puts := range r.in {
				for k, v := range puts.(map[string]string) {
					j.store[k] = v
				}
			}
		}
		j.round, j.entered = nil, 0
		close(r.done)
	}
	j.mu.Unlock()
	select {
	case <-r.done:
		return r.in, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// inRound says how many ranks have entered the current collective.
func (j *fakeJob) inRound() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.entered
}

// fakeRank is one rank's pmi.Backend.
type fakeRank struct {
	job  *fakeJob
	rank int
}

var _ pmi.Backend = fakeRank{}

func (f fakeRank) Info() pmi.JobInfo {
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	return pmi.JobInfo{Rank: f.rank, Size: f.job.n, AppNum: 0, KVSName: "kvs_fake", UniverseSize: f.job.n,
		Spawner: f.job.spawner}
}

// Put fails for the key "fail", so that tests see a server error.
func (f fakeRank) Put(key, value string) error {
	if key == "fail" {
		return errors.New("refused by the test")
	}
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	f.job.pending[f.rank][key] = value
	return nil
}

func (f fakeRank) Fence(ctx context.Context) error {
	f.job.mu.Lock()
	puts := f.job.pending[f.rank]
	f.job.pending[f.rank] = map[string]string{}
	f.job.mu.Unlock()
	_, err := f.job.enter(ctx, "fence", f.rank, puts)
	return err
}

func (f fakeRank) Get(key string) (string, bool) {
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	v, ok := f.job.store[key]
	return v, ok
}

func (f fakeRank) PutNodeAttr(string, string) {}

func (f fakeRank) NodeAttr(context.Context, string, bool) (string, bool) { return "", false }

func (f fakeRank) Allgather(ctx context.Context, value string) ([]string, error) {
	in, err := f.job.enter(ctx, "allgather", f.rank, value)
	if err != nil {
		return nil, err
	}
	values := make([]string, len(in))
	for i, v := range in {
		values[i] = v.(string)
	}
	return values, nil
}

type ringIn struct {
	count       int
	left, right string
}

func (f fakeRank) Ring(ctx context.Context, count int, left, right string) (pmi.Ring, error) {
	in, err := f.job.enter(ctx, "ring", f.rank, ringIn{count, left, right})
	if err != nil {
		return pmi.Ring{}, err
	}
	n, sum := len(in), 0
	for r := range f.rank {
		sum += in[r].(ringIn).count
	}
	return pmi.Ring{Count: sum, Left: in[(f.rank+n-1)%n].(ringIn).right, Right: in[(f.rank+1)%n].(ringIn).left}, nil
}

// Abort "kills" the rank: its Serve ends, which closes the connection.
func (f fakeRank) Abort(status int, _ string) {
	f.job.mu.Lock()
	f.job.aborts = append(f.job.aborts, status)
	kill := f.job.kill[f.rank]
	f.job.mu.Unlock()
	kill()
}

func (f fakeRank) Finalize() {
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	f.job.finalized++
}

// Spawn records the request and names the new job after their number.
func (f fakeRank) Spawn(_ context.Context, req modex.SpawnRequest) (string, error) {
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	if f.job.spawnErr != nil {
		return "", f.job.spawnErr
	}
	f.job.spawns = append(f.job.spawns, req)
	return fmt.Sprintf("kvs_fake_%d", len(f.job.spawns)), nil
}

func (f fakeRank) Publish(_ context.Context, service, port string) error {
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	if _, taken := f.job.names[service]; taken {
		return fmt.Errorf("service %s is already published", service)
	}
	f.job.names[service] = port
	return nil
}

func (f fakeRank) Lookup(_ context.Context, service string) (string, error) {
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	if port, ok := f.job.names[service]; ok {
		return port, nil
	}
	return "", pmi.ErrNotPublished
}

func (f fakeRank) Unpublish(_ context.Context, service string) error {
	f.job.mu.Lock()
	defer f.job.mu.Unlock()
	if _, ok := f.job.names[service]; !ok {
		return pmi.ErrNotPublished
	}
	delete(f.job.names, service)
	return nil
}

// testJob is a started fakeJob: one connected Client per rank.
type testJob struct {
	*fakeJob
	clients []*Client
	served  []chan error // what each rank's Serve returned
}

func newFakeJob(n int) *fakeJob {
	j := &fakeJob{n: n, store: map[string]string{}, kill: make([]context.CancelFunc, n), names: map[string]string{}}
	for range n {
		j.pending = append(j.pending, map[string]string{})
	}
	return j
}

// serveRank serves rank r of job on conn until the test ends or the rank
// is "killed"; the channel gets what Serve returned.
func serveRank(t *testing.T, job *fakeJob, r int, conn net.Conn) chan error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	job.mu.Lock()
	job.kill[r] = cancel
	job.mu.Unlock()
	served := make(chan error, 1)
	go func() { served <- pmi.Serve(ctx, conn, fakeRank{job, r}, nil) }()
	t.Cleanup(func() {
		cancel()
		err := <-served // Serve is gone before the test ends
		served <- err
	})
	return served
}

// startJob serves n ranks and connects a Client to each. Everything ends
// with the test.
func startJob(t *testing.T, n int) *testJob {
	t.Helper()
	tj := &testJob{fakeJob: newFakeJob(n)}
	for r := range n {
		client, server := socketPair(t)
		t.Cleanup(func() { client.Close() })
		tj.served = append(tj.served, serveRank(t, tj.fakeJob, r, server))
		c, err := InitConn(client, r, "job1")
		if err != nil {
			t.Fatalf("rank %d: InitConn: %v", r, err)
		}
		tj.clients = append(tj.clients, c)
	}
	return tj
}

// eachRank runs fn for every rank at once, as the ranks of a job do, and
// waits for all of them.
func (tj *testJob) eachRank(t *testing.T, fn func(c *Client) error) {
	t.Helper()
	errs := make(chan error, tj.n)
	for _, c := range tj.clients {
		go func() {
			if err := fn(c); err != nil {
				errs <- fmt.Errorf("rank %d: %w", c.Rank(), err)
				return
			}
			errs <- nil
		}()
	}
	for range tj.n {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("a rank hangs")
		}
	}
}

// socketPair connects two ends the way PMI_FD is connected.
func socketPair(t testing.TB) (a, b net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fileConn(t, fds[0]), fileConn(t, fds[1])
}

func fileConn(t testing.TB, fd int) net.Conn {
	t.Helper()
	f := os.NewFile(uintptr(fd), "pmi")
	defer f.Close() // FileConn dups it
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
