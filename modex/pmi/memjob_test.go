package pmi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"prsh/modex"
)

// memJob is an in-memory Backend for a whole job on one machine: the
// store, the fence, node attributes and the ring, shared by the rank
// connections of a test. It is what a daemon does, without the tree.
type memJob struct {
	info     JobInfo // Rank is filled in per rank
	rankNode []int   // node of each rank; node attributes are per node

	mu      sync.Mutex
	store   map[string]string   // committed by completed fences
	pending []map[string]string // per rank: puts since its last fence
	staged  map[string]string   // puts of the ranks inside the current fence
	inFence int
	fenced  chan struct{} // closed when the current fence completes
	fences  int           // completed fences

	attrs   map[int]map[string]string // per node
	changed chan struct{}             // closed and replaced on every node attribute put
	parked  int                       // NodeAttr calls that had to wait

	// holdPuts, when set, makes PutNodeAttr wait (up to 10 s) until that
	// many NodeAttr calls are parked, so that a test surely exercises the
	// wait=TRUE path with a real client.
	holdPuts int

	ring   *ringRound
	gather *gatherRound

	spawns   []modex.SpawnRequest // what Spawn was asked, in order
	spawnErr error                // when set, Spawn fails with it
	names    map[string]string    // the name service

	aborts    []int            // statuses given to Abort
	onAbort   func(status int) // the test's "kill the job", if any
	finalized int
}

// ringRound collects one PMIX_Ring collective.
type ringRound struct {
	count       []int
	left, right []string
	in          int
	out         []Ring
	done        chan struct{}
}

// gatherRound collects one allgather.
type gatherRound struct {
	values []string
	in     int
	done   chan struct{}
}

func newMemJob(info JobInfo, rankNode []int) *memJob {
	if rankNode == nil {
		rankNode = make([]int, info.Size)
	}
	j := &memJob{info: info, rankNode: rankNode, store: map[string]string{},
		staged: map[string]string{}, fenced: make(chan struct{}), changed: make(chan struct{}),
		attrs: map[int]map[string]string{}, names: map[string]string{}}
	for range info.Size {
		j.pending = append(j.pending, map[string]string{})
	}
	j.ring = newRingRound(info.Size)
	j.gather = &gatherRound{values: make([]string, info.Size), done: make(chan struct{})}
	return j
}

func newRingRound(n int) *ringRound {
	return &ringRound{count: make([]int, n), left: make([]string, n), right: make([]string, n),
		done: make(chan struct{})}
}

// rank returns the Backend of one rank's connection.
func (j *memJob) rank(r int) Backend { return &memRank{job: j, rank: r} }

type memRank struct {
	job  *memJob
	rank int
}

func (m *memRank) Info() JobInfo {
	info := m.job.info
	info.Rank = m.rank
	return info
}

func (m *memRank) Put(key, value string) error {
	m.job.mu.Lock()
	defer m.job.mu.Unlock()
	m.job.pending[m.rank][key] = value
	return nil
}

func (m *memRank) Fence(ctx context.Context) error {
	j := m.job
	j.mu.Lock()
	for k, v := range j.pending[m.rank] {
		j.staged[k] = v
	}
	j.pending[m.rank] = map[string]string{}
	done := j.fenced
	if j.inFence++; j.inFence == j.info.Size {
		for k, v := range j.staged {
			j.store[k] = v
		}
		j.staged, j.inFence, j.fences = map[string]string{}, 0, j.fences+1
		close(j.fenced)
		j.fenced = make(chan struct{})
	}
	j.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memRank) Get(key string) (string, bool) {
	m.job.mu.Lock()
	defer m.job.mu.Unlock()
	v, ok := m.job.store[key]
	return v, ok
}

func (m *memRank) PutNodeAttr(key, value string) {
	j := m.job
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		j.mu.Lock()
		enough := j.parked >= j.holdPuts
		j.mu.Unlock()
		if enough {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	node := j.rankNode[m.rank]
	if j.attrs[node] == nil {
		j.attrs[node] = map[string]string{}
	}
	j.attrs[node][key] = value
	close(j.changed)
	j.changed = make(chan struct{})
}

func (m *memRank) NodeAttr(ctx context.Context, key string, wait bool) (string, bool) {
	j := m.job
	for waited := false; ; waited = true {
		j.mu.Lock()
		v, ok := j.attrs[j.rankNode[m.rank]][key]
		changed := j.changed
		if !ok && wait && !waited {
			j.parked++
		}
		j.mu.Unlock()
		if ok || !wait {
			return v, ok
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", false
		}
	}
}

func (m *memRank) Ring(ctx context.Context, count int, left, right string) (Ring, error) {
	j := m.job
	j.mu.Lock()
	round := j.ring
	round.count[m.rank], round.left[m.rank], round.right[m.rank] = count, left, right
	if round.in++; round.in == j.info.Size {
		round.out = ringResult(round.count, round.left, round.right)
		close(round.done)
		j.ring = newRingRound(j.info.Size)
	}
	j.mu.Unlock()
	select {
	case <-round.done: // round.out was written before done was closed
		return round.out[m.rank], nil
	case <-ctx.Done():
		return Ring{}, ctx.Err()
	}
}

func (m *memRank) Allgather(ctx context.Context, value string) ([]string, error) {
	j := m.job
	j.mu.Lock()
	round := j.gather
	round.values[m.rank] = value
	if round.in++; round.in == j.info.Size {
		close(round.done)
		j.gather = &gatherRound{values: make([]string, j.info.Size), done: make(chan struct{})}
	}
	j.mu.Unlock()
	select {
	case <-round.done: // no rank writes round.values once done is closed
		return round.values, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ringResult is PMIX_Ring in rank order: each rank's count is the sum of
// those before it, its left the right value of the rank before it, its
// right the left value of the rank after it, wrapping round.
func ringResult(count []int, left, right []string) []Ring {
	n := len(count)
	out := make([]Ring, n)
	sum := 0
	for r := range n {
		out[r] = Ring{Count: sum, Left: right[(r+n-1)%n], Right: left[(r+1)%n]}
		sum += count[r]
	}
	return out
}

func (m *memRank) Abort(status int, _ string) {
	m.job.mu.Lock()
	m.job.aborts = append(m.job.aborts, status)
	kill := m.job.onAbort
	m.job.mu.Unlock()
	if kill != nil {
		kill(status)
	}
}

func (m *memRank) Finalize() {
	m.job.mu.Lock()
	defer m.job.mu.Unlock()
	m.job.finalized++
}

// Spawn records the request; the new job is named after this one and the
// number of spawns so far.
func (m *memRank) Spawn(_ context.Context, req modex.SpawnRequest) (string, error) {
	m.job.mu.Lock()
	defer m.job.mu.Unlock()
	if m.job.spawnErr != nil {
		return "", m.job.spawnErr
	}
	m.job.spawns = append(m.job.spawns, req)
	return m.job.info.KVSName + "_" + strconv.Itoa(len(m.job.spawns)), nil
}

func (m *memRank) Publish(_ context.Context, service, port string) error {
	m.job.mu.Lock()
	defer m.job.mu.Unlock()
	if _, taken := m.job.names[service]; taken {
		return fmt.Errorf("service %s is already published", service)
	}
	m.job.names[service] = port
	return nil
}

func (m *memRank) Lookup(_ context.Context, service string) (string, error) {
	m.job.mu.Lock()
	defer m.job.mu.Unlock()
	if port, ok := m.job.names[service]; ok {
		return port, nil
	}
	return "", fmt.Errorf("%w: %s", ErrNotPublished, service)
}

func (m *memRank) Unpublish(_ context.Context, service string) error {
	m.job.mu.Lock()
	defer m.job.mu.Unlock()
	if _, ok := m.job.names[service]; !ok {
		return fmt.Errorf("%w: %s", ErrNotPublished, service)
	}
	delete(m.job.names, service)
	return nil
}

// errNoSlots is the spawn failure of the scripts' "failspawn=1" jobs.
var errNoSlots = errors.New("not enough slots for 2 ranks")
