package daemon

import (
	"encoding/json"
	"sync"

	"prsh/daemon/dvm"
	"prsh/iof"
)

// dvmSink passes each job's output, lines and status to its client. The
// tree's relays carry every job's chunks on one stream per child, and the
// loop serves every job: neither may wait for one client. So each job
// has a queue that a goroutine of its own writes to its client, in order.
// A client that lags behind its ranks by more than backlogBytes has its
// job's ranks held (outputBacklog) until it has taken half of it: the
// backlog stays bounded, and the other jobs and the DVM never wait for
// that client.
type dvmSink struct {
	post func(any) bool
	mu   sync.Mutex
	// jobs are the outboxes by job; a child job's (MPI_Comm_spawn) is
	// its client's job's, where it is numbered ordinals[child].
	jobs     map[int]*jobOutbox
	ordinals map[int]int
	writers  sync.WaitGroup
}

// backlogBytes bounds the output a job's client lags behind by (about:
// what is already in the pipes and on the links still comes).
const backlogBytes = 8 << 20

// jobOutbox is one job's frames on their way to its client.
type jobOutbox struct {
	job   int
	conn  *dvm.Conn
	open  int             // the job's streams not yet ended, its child jobs' included
	ended map[jobRank]int // by rank (of the job, 0, or of a child job by its ordinal), its streams that ended (or were given up on)
	queue []outFrame      // in order
	bytes int             // the output the queue holds
	held  bool            // the job's ranks are held for its client
	// heldAt is the backlog when the hold last went out: a hold undone
	// meanwhile (the client's own SIGCONT, fg) is sent again a bound on.
	heldAt int
	said   bool // outputEnded went to the loop
	wake   chan struct{}
}

// outFrame is an output chunk (with a copy of its bytes), or a frame of
// kind with payload; Status is the last, after which the client is let go.
type outFrame struct {
	chunk   iof.Chunk
	kind    byte // 0: the chunk
	payload []byte
}

func newDVMSink(post func(any) bool) *dvmSink {
	return &dvmSink{post: post, jobs: map[int]*jobOutbox{}, ordinals: map[int]int{}}
}

// begin opens job's output to conn: 2 streams per rank; once each has
// ended and been written, the loop hears outputEnded.
func (s *dvmSink) begin(job int, conn *dvm.Conn, ranks int) {
	o := &jobOutbox{job: job, conn: conn, open: 2 * ranks, ended: map[jobRank]int{}, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.jobs[job] = o
	s.mu.Unlock()
	s.writers.Add(1)
	go s.write(o)
}

// Send queues a chunk for its job's client; it never waits for the
// client, and never fails: a client gone takes nothing, and the tree's
// relays must go on.
func (s *dvmSink) Send(c iof.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.jobs[c.Job]
	if !ok {
		return nil
	}
	c.Job = s.ordinals[c.Job]
	c.Data = append([]byte(nil), c.Data...)
	o.queue = append(o.queue, outFrame{chunk: c})
	o.bytes += len(c.Data)
	if k := (jobRank{c.Job, c.Rank}); c.EOF && o.ended[k] < 2 {
		o.ended[k]++
		o.open--
	}
	if o.bytes > backlogBytes && (!o.held || o.bytes > o.heldAt+backlogBytes) {
		o.held, o.heldAt = true, o.bytes
		go s.post(outputBacklog{job: o.job, full: true})
	}
	poke(o.wake)
	return nil
}

// frame queues a frame for job's client, after the output before it.
func (s *dvmSink) frame(job int, kind byte, payload []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.jobs[job]; ok {
		o.queue = append(o.queue, outFrame{kind: kind, payload: payload})
		poke(o.wake)
	}
}

// forget stops waiting for the streams of job's ranks (a client's job,
// or a child job of it) that have not ended: their daemon was lost, and
// their ends will never come.
func (s *dvmSink) forget(job int, ranks []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.jobs[job]
	if !ok {
		return
	}
	for _, r := range ranks {
		k := jobRank{s.ordinals[job], r}
		o.open -= 2 - o.ended[k]
		o.ended[k] = 2
	}
	poke(o.wake)
}

// finish gives job's client its status after everything queued, then
// lets it go.
func (s *dvmSink) finish(job, status int) {
	b, _ := json.Marshal(dvm.Status{Status: status})
	s.frame(job, dvm.KindStatus, b)
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.jobs[job]
	for j, other := range s.jobs { // nothing more for it, nor its child jobs
		if other == o {
			delete(s.jobs, j)
			delete(s.ordinals, j)
		}
	}
}

// addChild sends child job's output (ranks of it) to the client of job
// client, numbered ordinal there; its status waits for its streams too.
func (s *dvmSink) addChild(child, client, ordinal, ranks int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.jobs[client]
	if !ok {
		return false
	}
	s.jobs[child], s.ordinals[child] = o, ordinal
	o.open += 2 * ranks
	return true
}

// wait waits for every job's writer to end.
func (s *dvmSink) wait() { s.writers.Wait() }

// write is job o's writer: it writes the queue to the client in order,
// tells the loop once every stream has ended and been written, and ends
// with the Status frame.
func (s *dvmSink) write(o *jobOutbox) {
	defer s.writers.Done()
	defer o.conn.Close()
	for {
		s.mu.Lock()
		batch := o.queue
		o.queue = nil
		if o.open <= 0 && len(batch) == 0 && !o.said {
			o.said = true
			go s.post(outputEnded{o.job})
		}
		s.mu.Unlock()
		if len(batch) == 0 {
			<-o.wake
			continue
		}
		if last := s.writeBatch(o, batch); last {
			return
		}
	}
}

// writeBatch writes frames to o's client (a write to a client gone fails
// at once) and says whether the last, the Status, went.
func (s *dvmSink) writeBatch(o *jobOutbox, batch []outFrame) bool {
	written := 0
	for _, f := range batch {
		if f.kind == 0 {
			o.conn.WriteOutput(f.chunk)
			written += len(f.chunk.Data)
			continue
		}
		o.conn.Write(f.kind, f.payload)
		if f.kind == dvm.KindStatus {
			return true
		}
	}
	s.written(o, written)
	return false
}

// written counts bytes out of the backlog, and lets the job's ranks go
// on once its client has caught up.
func (s *dvmSink) written(o *jobOutbox, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o.bytes -= n
	if o.held && o.bytes < backlogBytes/2 {
		o.held = false
		go s.post(outputBacklog{job: o.job, full: false})
	}
}

// poke wakes a writer without ever waiting.
func poke(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// jobRank names a rank of a job.
type jobRank struct{ job, rank int }
