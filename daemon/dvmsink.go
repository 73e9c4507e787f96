package daemon

import (
	"sync"

	"prsh/daemon/dvm"
	"prsh/iof"
)

// dvmSink passes each job's output to its client. The tree's relays
// carry every job's chunks on one stream per child, so a Send must never
// wait for one client: each job has a queue that a goroutine of its own
// writes to its client. A client that lags behind its ranks by more than
// backlogBytes has its job's ranks held (outputBacklog) until it has
// taken half of it: the backlog stays bounded, and the other jobs and the
// DVM never wait for that client.
type dvmSink struct {
	post func(any) bool
	mu   sync.Mutex
	jobs map[int]*jobOutbox
}

// backlogBytes bounds the output a job's client lags behind by (about:
// what is already in the pipes and on the links still comes).
const backlogBytes = 8 << 20

// jobOutbox is one job's output on its way to its client.
type jobOutbox struct {
	job   int
	conn  *dvm.Conn
	open  int         // the job's streams not yet ended
	queue []iof.Chunk // each with a copy of its bytes
	bytes int         // what the queue holds
	held  bool        // the job's ranks are held for its client
	ended bool        // end: write nothing more
	wake  chan struct{}
}

func newDVMSink(post func(any) bool) *dvmSink {
	return &dvmSink{post: post, jobs: map[int]*jobOutbox{}}
}

// begin opens job's output to conn: 2 streams per rank; once each has
// ended and been written, the loop hears outputEnded.
func (s *dvmSink) begin(job int, conn *dvm.Conn, ranks int) {
	o := &jobOutbox{job: job, conn: conn, open: 2 * ranks, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.jobs[job] = o
	s.mu.Unlock()
	go s.write(o)
}

// end stops job's output: its client is answered, or gone.
func (s *dvmSink) end(job int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.jobs[job]; ok {
		o.ended = true
		delete(s.jobs, job)
		poke(o.wake)
	}
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
	c.Data = append([]byte(nil), c.Data...)
	o.queue = append(o.queue, c)
	o.bytes += len(c.Data)
	if c.EOF {
		o.open--
	}
	if o.bytes > backlogBytes && !o.held {
		o.held = true
		go s.post(outputBacklog{job: o.job, full: true})
	}
	poke(o.wake)
	return nil
}

// write is job o's writer: it takes the queue and writes it to the
// client until every stream has ended, then tells the loop.
func (s *dvmSink) write(o *jobOutbox) {
	for {
		s.mu.Lock()
		batch, over := o.queue, o.ended
		o.queue = nil
		done := o.open <= 0 && len(batch) == 0
		s.mu.Unlock()
		switch {
		case over:
			return
		case done:
			s.post(outputEnded{o.job})
			return
		case len(batch) == 0:
			<-o.wake
			continue
		}
		for _, c := range batch {
			o.conn.WriteOutput(c) // fails at once for a client gone
		}
		s.written(o, batch)
	}
}

// written counts a batch out of the backlog, and lets the job's ranks go
// on once its client has caught up.
func (s *dvmSink) written(o *jobOutbox, batch []iof.Chunk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range batch {
		o.bytes -= len(c.Data)
	}
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
