package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"prsh/daemon/protocol"
	"prsh/iof"
	"prsh/modex"
	"prsh/modex/pmi"
)

// pmiFD is where a rank finds its PMI socket: the first descriptor after
// stdio, passed on by the node's guard.
const pmiFD = 3

// pmiSocket makes the socket pair of one rank's PMI connection: the
// daemon's end, and the rank's, which only that rank inherits.
func pmiSocket() (daemonEnd net.Conn, rankEnd *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("PMI socket: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "pmi")
	defer mine.Close() // FileConn dups it
	conn, err := net.FileConn(mine)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("PMI socket: %w", err)
	}
	return conn, os.NewFile(uintptr(fds[1]), "pmi-rank"), nil
}

// pmiEnv tells a rank's PMI client where its server is and who it is.
func pmiEnv(job protocol.JobSpec, app protocol.Launch, rank int) []string {
	return []string{
		"PMI_FD=" + strconv.Itoa(pmiFD), "PMI_RANK=" + strconv.Itoa(rank),
		"PMI_SIZE=" + strconv.Itoa(len(app.RankNode)), "PMI_JOBID=" + kvsName(job, app),
	}
}

// kvsName names the job's PMI key-value space: a DVM's jobs each have
// their own.
func kvsName(job protocol.JobSpec, app protocol.Launch) string {
	if app.Job == 0 {
		return job.ID
	}
	return job.ID + "_" + strconv.Itoa(app.Job)
}

// newPMIService makes the PMI service of local rank id of job jr;
// mapping is the job's PMI_process_mapping, worked out once for all of
// them.
func (d *Daemon) newPMIService(jr *jobRanks, id int, mapping string) *pmiService {
	ctx, stop := context.WithCancel(d.ctx)
	s := &pmiService{
		d: d, job: jr, rank: id, ctx: ctx, stop: stop,
		done: make(chan collectiveResult[modex.View], 1), ring: make(chan collectiveResult[pmi.Ring], 1),
		gathered: make(chan collectiveResult[[]string], 1),
	}
	s.info = pmi.JobInfo{
		Rank: id, Size: len(jr.app.RankNode), KVSName: kvsName(d.machine.Job(), jr.app),
		UniverseSize: len(jr.app.RankNode), ProcessMapping: mapping,
	}
	if p := jr.app.Parent; p != nil { // a child job: its parent's name, and what it preput
		s.info.Spawner = p.Name
		s.view = s.view.With(protocol.Preputs(jr.app.Preput))
	}
	return s
}

// firstWords waits, for all of the process's ranks, until a rank first
// writes to its PMI socket or closes it: most ranks of a job that is not
// MPI never speak, and a server waiting on each was a goroutine (8 KiB
// of stack) and a 4 KiB reader per rank.
var firstWords = iof.NewPumps()

// servePMI serves the PMI socket rank r inherited, once the rank speaks
// on it or its service stops, unless a PMI_PORT connection speaks for
// the rank first.
func (d *Daemon) servePMI(conn net.Conn, r *rank) {
	serve := func() {
		defer close(r.pmiDone)
		d.runPMI(&claimingConn{Conn: conn, s: r.pmi}, r, viaInherited)
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		go serve()
		return
	}
	cancel, err := firstWords.Await(sc, func() {
		if closedUnused(sc) { // Serve would return at once, and nil
			conn.Close()
			close(r.pmiDone)
			return
		}
		go serve()
	})
	if err != nil {
		d.log.Debug("PMI socket served at once", "rank", r.id, "error", err)
		go serve()
		return
	}
	context.AfterFunc(r.pmi.ctx, func() { // Serve then sees the service stopped
		if cancel() {
			serve()
		}
	})
}

// closedUnused says whether the rank closed its PMI socket without a
// word (most ranks of a job that is not MPI): their servers starting
// together as the ranks end made mpirun's peak memory.
func closedUnused(sc syscall.Conn) bool {
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = n == 0 && err == nil
	})
	return closed
}

// runPMI serves one of rank r's connections; if it is the one that
// speaks for the rank, it ends the rank's service and tells the machine
// how the conversation ended.
func (d *Daemon) runPMI(conn net.Conn, r *rank, via speaker) {
	err := pmi.Serve(r.pmi.ctx, conn, r.pmi, d.log.Named("pmi").With("rank", r.id))
	if r.pmi.speaker() != via {
		return
	}
	r.pmi.stop()
	if ended, ok := pmiEnded(r.id, err); ok {
		ended.Job = r.pmi.job.num
		d.post(ended)
	}
}

// pmiEnded says what the end of a rank's PMI connection means for the
// job: nothing (finalised, never used, aborted: the abort was reported),
// a rank that used PMI and left without finalising, or bad input.
func pmiEnded(rank int, err error) (protocol.PMIEnded, bool) {
	switch {
	case errors.Is(err, pmi.ErrClosedEarly):
		return protocol.PMIEnded{Rank: rank, Used: true}, true
	case errors.Is(err, pmi.ErrProtocol):
		msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("pmi: rank %d: ", rank))
		return protocol.PMIEnded{Rank: rank, Used: true, Err: strings.TrimPrefix(msg, pmi.ErrProtocol.Error()+": ")}, true
	}
	return protocol.PMIEnded{}, false
}

// pmiService is one rank's side of the modex: the pmi.Backend its wire
// server calls, from that server's goroutine. A fence goes to the event
// loop and waits for its answer; gets are answered from the view the
// last fence gave, without the loop.
type pmiService struct {
	d       *Daemon
	job     *jobRanks // whose rank it serves
	rank    int
	speaks  atomic.Int32       // the speaker: which connection speaks for the rank
	ctx     context.Context    // its server's lifetime
	stop    context.CancelFunc // ends its server
	waiting atomic.Bool        // it waits in a collective
	info    pmi.JobInfo
	puts    []modex.KV
	view    modex.View
	// done, ring and gathered are the loop's answers to this rank's
	// fence, ring and allgather.
	done     chan collectiveResult[modex.View]
	ring     chan collectiveResult[pmi.Ring]
	gathered chan collectiveResult[[]string]
}

// allgatherWait is the driver event of a rank that entered an allgather.
type allgatherWait struct {
	service *pmiService
	value   string
}

// ringWait is the driver event of a rank that entered a ring.
type ringWait struct {
	service *pmiService
	entry   protocol.RingEntered
}

// fenceWait is the driver event of a rank that entered a fence.
type fenceWait struct {
	service *pmiService
	puts    []modex.KV
}

func (s *pmiService) Info() pmi.JobInfo { return s.info }

func (s *pmiService) Put(key, value string) error {
	s.puts = append(s.puts, modex.KV{Key: key, Value: value})
	return nil
}

func (s *pmiService) Fence(ctx context.Context) error {
	if !s.d.post(fenceWait{s, s.puts}) {
		return errors.New("the daemon is ending")
	}
	s.puts = nil
	s.waiting.Store(true)
	defer s.waiting.Store(false)
	select {
	case res := <-s.done:
		s.view = res.value
		return res.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *pmiService) Get(key string) (string, bool) { return s.view.Get(key) }

func (s *pmiService) PutNodeAttr(key, value string) { s.d.nodeAttrs.put(key, value) }

func (s *pmiService) NodeAttr(ctx context.Context, key string, wait bool) (string, bool) {
	s.waiting.Store(wait)
	defer s.waiting.Store(false)
	return s.d.nodeAttrs.get(ctx, key, wait)
}

func (s *pmiService) Allgather(ctx context.Context, value string) ([]string, error) {
	if !s.d.post(allgatherWait{s, value}) {
		return nil, errors.New("the daemon is ending")
	}
	s.waiting.Store(true)
	defer s.waiting.Store(false)
	select {
	case res := <-s.gathered:
		return res.value, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *pmiService) Ring(ctx context.Context, count int, left, right string) (pmi.Ring, error) {
	if !s.d.post(ringWait{s, protocol.RingEntered{Job: s.job.num, Rank: s.rank, Count: count, Left: left, Right: right}}) {
		return pmi.Ring{}, errors.New("the daemon is ending")
	}
	s.waiting.Store(true)
	defer s.waiting.Store(false)
	select {
	case res := <-s.ring:
		return res.value, res.err
	case <-ctx.Done():
		return pmi.Ring{}, ctx.Err()
	}
}

func (s *pmiService) Abort(status int, msg string) {
	s.d.post(protocol.Aborted{Job: s.job.num, Rank: s.rank, Status: status, Msg: msg})
}

func (s *pmiService) Finalize() { s.d.post(protocol.PMIFinalize{Job: s.job.num, Rank: s.rank}) }

// waiting says whether a rank's job still runs here: a released job's
// rank waits for nothing.
func (d *Daemon) waiting(s *pmiService) bool { return d.jobs[s.job.num] == s.job }

// fenceEntered notes who waits for the fence, then tells the machine.
func (d *Daemon) fenceEntered(w fenceWait) {
	if jr := w.service.job; d.waiting(w.service) {
		jr.fenceWaiters = append(jr.fenceWaiters, w.service)
		d.step(protocol.FenceEntered{Job: jr.num, Rank: w.service.rank, Puts: w.puts})
	}
}

// collectiveResult is what a rank's fence (the view), allgather (the
// values) or ring (its answer) gives, with an error when ranks left
// before entering it: a result without their parts would be a wrong
// answer.
type collectiveResult[T any] struct {
	value T
	err   error
}

// fenceDone releases every local rank of job waiting in the fence: a
// rank is in one fence at a time, and enters the next only once released.
func (d *Daemon) fenceDone(done protocol.FenceDone) {
	res := collectiveResult[modex.View]{done.View, collectiveGone(done.Gone)}
	if jr, ok := d.jobs[done.Job]; ok {
		for _, s := range jr.fenceWaiters {
			answer(s.done, res)
		}
		jr.fenceWaiters = nil
	}
}

// collectiveGone is the error of a collective (a fence, an allgather, a
// ring) that ranks left (finalised or exited) before entering, if any
// did.
func collectiveGone(gone []int) error {
	if len(gone) == 0 {
		return nil
	}
	return fmt.Errorf("rank(s) %s finalized or exited without entering it", protocol.GroupName(gone))
}

// allgatherEntered notes who waits for the allgather, then tells the
// machine.
func (d *Daemon) allgatherEntered(w allgatherWait) {
	if jr := w.service.job; d.waiting(w.service) {
		jr.gatherWaiters = append(jr.gatherWaiters, w.service)
		d.step(protocol.AllgatherEntered{Job: jr.num, Rank: w.service.rank, Value: w.value})
	}
}

// allgatherDone gives every local rank of job in the allgather the
// values.
func (d *Daemon) allgatherDone(done protocol.AllgatherDone) {
	res := collectiveResult[[]string]{done.Values, collectiveGone(done.Gone)}
	if jr, ok := d.jobs[done.Job]; ok {
		for _, s := range jr.gatherWaiters {
			answer(s.gathered, res)
		}
		jr.gatherWaiters = nil
	}
}

// ringEntered notes who waits for the ring, then tells the machine.
func (d *Daemon) ringEntered(w ringWait) {
	if d.waiting(w.service) {
		w.service.job.ringWaiters[w.service.rank] = w.service
		d.step(w.entry)
	}
}

// ringDone gives each local rank of job in a finished ring its answer.
func (d *Daemon) ringDone(done protocol.RingDone) {
	jr, ok := d.jobs[done.Job]
	if !ok {
		return
	}
	err := collectiveGone(done.Gone)
	for _, a := range done.Answers {
		if s, ok := jr.ringWaiters[a.Rank]; ok {
			delete(jr.ringWaiters, a.Rank)
			answer(s.ring, collectiveResult[pmi.Ring]{pmi.Ring{Count: a.Count, Left: a.Left, Right: a.Right}, err})
		}
	}
}

// answer hands a waiting rank its result without ever blocking the loop:
// each channel holds one answer, and a rank waits for one at a time (one
// whose server has stopped simply never reads it).
func answer[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// nodeAttrs are the node-local attributes of PMI-2 (one store per
// daemon): a get may wait for a later put by another rank of the node.
type nodeAttrs struct {
	mu      sync.Mutex
	vals    map[string]string
	changed chan struct{} // closed and replaced at every put
}

func (a *nodeAttrs) put(key, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.vals == nil {
		a.vals = map[string]string{}
	}
	a.vals[key] = value
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

func (a *nodeAttrs) get(ctx context.Context, key string, wait bool) (string, bool) {
	for {
		a.mu.Lock()
		v, ok := a.vals[key]
		if a.changed == nil {
			a.changed = make(chan struct{})
		}
		changed := a.changed
		a.mu.Unlock()
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
