package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"prsh/daemon/dvm"
	"prsh/daemon/protocol"
	"prsh/errmgr"
	"prsh/errmgr/status"
	"prsh/iof"
)

// mpirun's side of a DVM (mpirun --dvm-start): the clients' socket, and
// their jobs, one at a time: the next is submitted once the previous
// one's status and all its output went to its client.

// DVMConfig makes mpirun a DVM.
type DVMConfig struct {
	URIFile  string   // where to write the URI once up; "" for none
	HostArgs []string // the -H values it was started with, for its clients
	Hostfile string
}

// dvmRoot is the DVM's clients, owned by the loop.
type dvmRoot struct {
	ln      *dvm.Listener
	sink    *dvmSink
	queue   []*dvmClient // waiting for their job's turn
	current *dvmClient   // whose job runs
	stopper *dvmClient   // who asked the DVM to stop
	lastJob int
}

// dvmClient is one client connection and its job.
type dvmClient struct {
	conn        *dvm.Conn
	submit      dvm.Submit
	job         int
	status      *int // the job's, once JobDone said it
	outputEnded bool
	gone        bool
}

// The loop's events from the clients' goroutines.
type (
	clientSubmitted struct{ c *dvmClient }
	clientSignalled struct {
		c   *dvmClient
		sig int
	}
	clientStopping struct{ c *dvmClient }
	clientGone     struct{ c *dvmClient }
	outputEnded    struct{ job int }
)

// listenDVM opens the clients' socket before the daemons are spawned.
func (d *Daemon) listenDVM() error {
	ln, err := dvm.Listen()
	if err != nil {
		return err
	}
	d.dvm = &dvmRoot{ln: ln, sink: &dvmSink{post: d.post}}
	return nil
}

// dvmAction carries out what the machine of a DVM asks of mpirun.
func (d *Daemon) dvmAction(a protocol.Action) {
	switch a := a.(type) {
	case protocol.DVMUp:
		d.dvmUp()
	case protocol.JobDone:
		d.jobDone(a)
	case protocol.JobStopped:
		if c := d.dvm.current; c != nil && c.job == a.Job && !c.gone {
			c.conn.Write(dvm.KindStopped, nil)
		}
	}
}

// dvmUp says where the DVM is, and takes clients from now on.
func (d *Daemon) dvmUp() {
	uri := d.dvm.ln.URI()
	if f := d.cfg.DVM.URIFile; f != "" {
		if err := dvm.WriteURIFile(f, uri); err != nil {
			d.step(protocol.CannotContinue{Err: "--dvm-uri: " + err.Error()})
			return
		}
	}
	fmt.Fprintln(d.cfg.Stdout, uri)
	go d.acceptClients()
}

func (d *Daemon) acceptClients() {
	hello := dvm.Hello{Version: dvm.Version, Hosts: d.machine.Job().Hosts,
		HostArgs: d.cfg.DVM.HostArgs, Hostfile: d.cfg.DVM.Hostfile}
	for {
		conn, err := d.dvm.ln.Accept()
		if err != nil {
			return // closed as the DVM ends
		}
		go d.serveClient(&dvmClient{conn: conn}, hello)
	}
}

// serveClient reads one client's frames and posts them to the loop; a
// client submits one job.
func (d *Daemon) serveClient(c *dvmClient, hello dvm.Hello) {
	if err := c.conn.WriteJSON(dvm.KindHello, hello); err != nil {
		c.conn.Close()
		return
	}
	submitted := false
	for {
		kind, payload, err := c.conn.Read()
		if err != nil {
			d.post(clientGone{c})
			return
		}
		switch kind {
		case dvm.KindSubmit:
			if !submitted && json.Unmarshal(payload, &c.submit) == nil {
				submitted = true
				d.post(clientSubmitted{c})
			}
		case dvm.KindSignal:
			var s dvm.Signal
			if json.Unmarshal(payload, &s) == nil {
				d.post(clientSignalled{c, s.Sig})
			}
		case dvm.KindStop:
			d.post(clientStopping{c})
		}
	}
}

// clientEvent takes one of the clients' events in the loop.
func (d *Daemon) clientEvent(ev any) {
	r := d.dvm
	switch e := ev.(type) {
	case clientSubmitted:
		r.queue = append(r.queue, e.c)
		d.submitNext()
	case clientSignalled:
		if e.c == r.current {
			d.jobSignal(e.c, syscall.Signal(e.sig))
		}
	case clientStopping:
		r.stopper = e.c
		d.step(protocol.StopDVM{})
	case clientGone:
		e.c.gone = true
		switch {
		case e.c != r.current:
			e.c.conn.Close() // queued, or it never submitted
		case e.c.status == nil:
			d.step(protocol.JobInterrupt{Job: e.c.job, Sig: protocol.SIGHUP, Name: "HUP"})
		}
	case outputEnded:
		if r.current != nil && r.current.job == e.job {
			r.current.outputEnded = true
			d.maybeJobOver()
		}
	}
}

// jobSignal passes a client's signal to its job: an interrupt ends it,
// any other reaches its ranks.
func (d *Daemon) jobSignal(c *dvmClient, sig syscall.Signal) {
	switch sig {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
		d.step(protocol.JobInterrupt{Job: c.job, Sig: int(sig), Name: status.SignalName(sig)})
	default:
		d.step(protocol.JobSignal{Job: c.job, Sig: int(sig)})
	}
}

// submitNext starts the next client's job once the DVM is free.
func (d *Daemon) submitNext() {
	r := d.dvm
	for r.current == nil && len(r.queue) > 0 && !d.machine.Ending() {
		c := r.queue[0]
		r.queue = r.queue[1:]
		if c.gone {
			continue
		}
		r.lastJob++
		c.job, r.current = r.lastJob, c
		r.sink.begin(c, len(c.submit.App.RankNode))
		d.step(protocol.Submit{Job: c.job, App: c.submit.App, TimeoutMS: c.submit.TimeoutMS})
	}
}

// jobDone: the job's status is final; it goes to the client once the
// job's output has too.
func (d *Daemon) jobDone(a protocol.JobDone) {
	if c := d.dvm.current; c != nil && c.job == a.Job {
		c.status = &a.Status
		d.maybeJobOver()
	}
}

func (d *Daemon) maybeJobOver() {
	r := d.dvm
	c := r.current
	if c == nil || c.status == nil || !c.outputEnded {
		return
	}
	r.sink.end()
	r.current = nil
	d.answer(c, *c.status)
	d.submitNext()
}

// answer gives a client its status and lets it go.
func (d *Daemon) answer(c *dvmClient, st int) {
	if !c.gone {
		c.conn.WriteJSON(dvm.KindStatus, dvm.Status{Status: st})
	}
	c.conn.Close()
}

// jobLine passes a line of the machine's to the job's client.
func (d *Daemon) jobLine(a protocol.Print) {
	if c := d.dvm.current; c != nil && c.job == a.Job && !c.gone {
		c.conn.Write(dvm.KindLine, []byte(a.Line))
	}
}

// endDVM answers every client as the DVM ends: the running job gets its
// status if it had one, else the DVM's (never 0: the job was cut short),
// the stopper the DVM's, jobs still queued a line and 255. A client
// that does not read is given up on after abandonWait.
func (d *Daemon) endDVM(st int) {
	r := d.dvm
	r.ln.Close()
	if f := d.cfg.DVM.URIFile; f != "" {
		removeIfOurs(f, r.ln.URI())
	}
	if c := r.current; c != nil {
		c.conn.SetWriteDeadline(time.Now().Add(abandonWait))
		d.answer(c, jobStatusAtEnd(c, st))
		r.sink.end()
	}
	for _, c := range r.queue {
		c.conn.Write(dvm.KindLine, []byte("mpirun: the DVM ended before the job started"))
		d.answer(c, 255)
	}
	if r.stopper != nil {
		d.answer(r.stopper, st)
	}
}

func jobStatusAtEnd(c *dvmClient, dvmStatus int) int {
	switch {
	case c.status != nil:
		return *c.status
	case dvmStatus == 0:
		return errmgr.StatusFailed
	}
	return dvmStatus
}

// removeIfOurs removes the URI file unless another DVM wrote it since.
func removeIfOurs(path, uri string) {
	if got, err := dvm.Resolve(path); err == nil && got == uri {
		os.Remove(path)
	}
}

// dvmSink passes the ranks' output to the running job's client, and
// tells the loop once every stream of the job has ended.
type dvmSink struct {
	post func(any) bool
	mu   sync.Mutex
	to   *dvmClient
	open int // the job's streams not yet ended
}

func (s *dvmSink) begin(c *dvmClient, ranks int) {
	s.mu.Lock()
	s.to, s.open = c, 2*ranks
	s.mu.Unlock()
	if ranks == 0 {
		go s.post(outputEnded{c.job})
	}
}

func (s *dvmSink) end() {
	s.mu.Lock()
	s.to = nil
	s.mu.Unlock()
}

// Send never fails: a client gone takes nothing, and the tree's relays
// must go on.
func (s *dvmSink) Send(c iof.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.to == nil {
		return nil
	}
	s.to.conn.WriteOutput(c) // fails at once for a client gone
	if c.EOF {
		if s.open--; s.open == 0 {
			go s.post(outputEnded{s.to.job})
		}
	}
	return nil
}
