package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"prsh/daemon/dvm"
	"prsh/daemon/protocol"
	"prsh/errmgr"
	"prsh/errmgr/status"
	"prsh/iof"
)

// mpirun's side of a DVM (mpirun --dvm-start): the clients' socket, and
// their jobs, which run at once: each is submitted as its client sends
// it, and its client is answered once its status and all its output went
// to it.

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
	clients map[int]*dvmClient // by job, from its submission to its answer
	stopper *dvmClient         // who asked the DVM to stop
	lastJob int
	// childClient is the client's job each child job descends from, and
	// its number there.
	childClient map[int]childOf
	// hello is what each client is told first; it changes as the DVM
	// loses nodes (lost).
	hello atomic.Pointer[dvm.Hello]
	lost  map[string]bool
}

// dvmClient is one client connection and its job.
type dvmClient struct {
	conn        *dvm.Conn
	submit      dvm.Submit
	job         int  // its number once submitted; 0 before
	children    int  // its job's child jobs so far (their numbers at the client)
	status      *int // the job's, once JobDone said it
	outputEnded bool
	gone        bool
	// input holds the client's next stdin chunk: it sends one only when
	// asked (KindInputWanted), so one is never more than one.
	input chan iof.Chunk
}

// The loop's events from the clients' goroutines and the job outputs.
type (
	clientSubmitted struct{ c *dvmClient }
	clientSignalled struct {
		c   *dvmClient
		sig int
	}
	clientStopping struct{ c *dvmClient }
	clientGone     struct{ c *dvmClient }
	outputEnded    struct{ job int }
	// outputBacklog: a job's client takes its output more slowly than
	// the ranks write it (full), or has caught up again.
	outputBacklog struct {
		job  int
		full bool
	}
)

// listenDVM opens the clients' socket before the daemons are spawned.
func (d *Daemon) listenDVM() error {
	ln, err := dvm.Listen()
	if err != nil {
		return err
	}
	d.dvm = &dvmRoot{ln: ln, sink: newDVMSink(d.post), clients: map[int]*dvmClient{}, lost: map[string]bool{},
		childClient: map[int]childOf{}}
	d.dvm.hello.Store(&dvm.Hello{Version: dvm.Version, Hosts: d.cfg.Job.Hosts,
		HostArgs: d.cfg.DVM.HostArgs, Hostfile: d.cfg.DVM.Hostfile})
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
		d.dvm.sink.frame(a.Job, dvm.KindStopped, nil)
	case protocol.DaemonsLost:
		d.daemonsLost(a)
	}
}

// daemonsLost tells every later client which nodes the DVM lost.
func (d *Daemon) daemonsLost(a protocol.DaemonsLost) {
	r := d.dvm
	hello := *r.hello.Load()
	hello.Lost = append(slices.Clone(hello.Lost), a.Hosts...)
	hello.Warnings = append(slices.Clone(hello.Warnings), a.Line)
	r.hello.Store(&hello)
	for _, h := range a.Hosts {
		r.lost[h] = true
	}
	lost := map[int]bool{}
	for _, id := range a.IDs {
		lost[id] = true
	}
	for job, c := range r.clients { // their ranks there send no stream's end
		r.sink.forget(job, ranksOn(c.submit.App.RankNode, lost))
	}
	for job, of := range r.childClient {
		r.sink.forget(job, ranksOn(of.rankNode, lost))
	}
}

// statusUsage is a client's status for a job it cannot submit as asked
// (mpirun's usage errors').
const statusUsage = 2

// lostNode is the first node of app's ranks that the DVM lost, or "".
func (d *Daemon) lostNode(app protocol.Launch) string {
	hosts := d.machine.Job().Hosts
	for _, id := range app.RankNode {
		if id >= 0 && id < len(hosts) && d.dvm.lost[hosts[id]] {
			return hosts[id]
		}
	}
	return ""
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
	for {
		conn, err := d.dvm.ln.Accept()
		if err != nil {
			return // closed as the DVM ends
		}
		go d.serveClient(&dvmClient{conn: conn}, *d.dvm.hello.Load())
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
	c.input = make(chan iof.Chunk, 1)
	defer close(c.input)
	for {
		kind, payload, err := c.conn.Read()
		if err != nil {
			d.post(clientGone{c})
			return
		}
		switch kind {
		case dvm.KindInput, dvm.KindInputEnd:
			select { // a client that sends unasked loses it
			case c.input <- iof.Chunk{Data: bytes.Clone(payload), EOF: kind == dvm.KindInputEnd}:
			default:
			}
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
		d.submitJob(e.c)
	case clientSignalled:
		if e.c.job != 0 && e.c.status == nil {
			d.jobSignal(e.c, syscall.Signal(e.sig))
		}
	case clientStopping:
		r.stopper = e.c
		d.step(protocol.StopDVM{})
	case clientGone:
		e.c.gone = true
		switch {
		case e.c.job == 0:
			e.c.conn.Close() // it never submitted
		case e.c.status == nil:
			d.step(protocol.JobInterrupt{Job: e.c.job, Sig: protocol.SIGHUP, Name: "HUP"})
		}
	case outputEnded:
		if c, ok := r.clients[e.job]; ok {
			c.outputEnded = true
			d.maybeJobOver(c)
		}
	case outputBacklog:
		d.outputBacklog(e)
	}
}

// jobInput starts passing the client's stdin to its job's ranks, once
// they all started: a chunk at a time, each asked of the client once the
// last one went into the stdin tree, where a rank that does not read
// holds up this job's input alone.
func (d *Daemon) jobInput(job int) {
	c, ok := d.dvm.clients[job]
	if !ok || c.gone || c.submit.App.StdinRank == protocol.StdinNone {
		return
	}
	target := c.submit.App.StdinRank
	if target == protocol.StdinAll {
		target = iof.AllRanks
	}
	go func() {
		c.conn.Write(dvm.KindInputWanted, nil)
		for in := range c.input {
			in.Job, in.Rank, in.Stream = job, target, iof.StdinStream
			if err := d.stdinTree.Send(in); err != nil || in.EOF {
				return
			}
			c.conn.Write(dvm.KindInputWanted, nil)
		}
	}()
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

// submitJob numbers a client's job and submits it: it runs beside the
// others.
func (d *Daemon) submitJob(c *dvmClient) {
	r := d.dvm
	if c.gone {
		return
	}
	if d.machine.Ending() { // a client that does not read holds the ending DVM abandonWait at most
		c.conn.SetWriteDeadline(time.Now().Add(abandonWait))
		c.conn.Write(dvm.KindLine, []byte("mpirun: the DVM ended before the job started"))
		d.answer(c, errmgr.StatusFailed)
		return
	}
	if node := d.lostNode(c.submit.App); node != "" { // its client planned before the loss
		c.conn.Write(dvm.KindLine, []byte("mpirun: --dvm: the DVM lost "+node+", where the job places ranks"))
		d.answer(c, statusUsage)
		return
	}
	r.lastJob++
	c.job = r.lastJob
	r.clients[c.job] = c
	r.sink.begin(c.job, c.conn, len(c.submit.App.RankNode))
	d.step(protocol.Submit{Job: c.job, App: c.submit.App, TimeoutMS: c.submit.TimeoutMS})
}

// jobDone: the job's status is final; it goes to the client once the
// job's output has too.
func (d *Daemon) jobDone(a protocol.JobDone) {
	if c, ok := d.dvm.clients[a.Job]; ok {
		c.status = &a.Status
		d.maybeJobOver(c)
	}
}

// maybeJobOver gives the client its status once the job's output has
// all gone to it, and lets it go.
func (d *Daemon) maybeJobOver(c *dvmClient) {
	if c.status == nil || !c.outputEnded {
		return
	}
	delete(d.dvm.clients, c.job)
	maps.DeleteFunc(d.dvm.childClient, func(_ int, of childOf) bool { return of.client == c.job })
	d.dvm.sink.finish(c.job, *c.status)
}

// outputBacklog holds a job's ranks (SIGSTOP) while its client lags
// behind their output by more than the job's backlog bound, and lets
// them go on (SIGCONT) once it has caught up: a client that reads slowly
// slows its own job, and the DVM holds a bounded backlog for it.
func (d *Daemon) outputBacklog(e outputBacklog) {
	if c, ok := d.dvm.clients[e.job]; !ok || c.status != nil {
		return
	}
	sig := syscall.SIGCONT
	if e.full {
		sig = syscall.SIGSTOP
	}
	d.step(protocol.JobSignal{Job: e.job, Sig: int(sig)})
}

// answer gives a client that has no job running its status and lets it
// go.
func (d *Daemon) answer(c *dvmClient, st int) {
	if !c.gone {
		c.conn.WriteJSON(dvm.KindStatus, dvm.Status{Status: st})
	}
	c.conn.Close()
}

// jobLine passes a line of the machine's to the job's client.
func (d *Daemon) jobLine(a protocol.Print) {
	d.dvm.sink.frame(a.Job, dvm.KindLine, []byte(a.Line))
}

// endDVM answers every client as the DVM ends: each job gets its status
// if it had one, else the DVM's (never 0: the job was cut short), the
// stopper the DVM's. A client that does not read is given up on after
// abandonWait.
func (d *Daemon) endDVM(st int) {
	r := d.dvm
	r.ln.Close()
	if f := d.cfg.DVM.URIFile; f != "" {
		removeIfOurs(f, r.ln.URI())
	}
	deadline := time.Now().Add(abandonWait)
	for _, job := range slices.Sorted(maps.Keys(r.clients)) {
		c := r.clients[job]
		c.conn.SetWriteDeadline(deadline)
		r.sink.finish(job, jobStatusAtEnd(c, st))
	}
	r.sink.wait()
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

// dvmChild numbers a child job of job parent (a client's, or a child
// job of it) and sends its output (its ranks on rankNode's daemons) to
// that client; 0 when the client's job is over.
func (d *Daemon) dvmChild(parent int, rankNode []int) int {
	r := d.dvm
	client := parent
	if of, ok := r.childClient[parent]; ok {
		client = of.client
	}
	c, ok := r.clients[client]
	if !ok || c.status != nil {
		return 0
	}
	r.lastJob++
	c.children++
	if !r.sink.addChild(r.lastJob, client, c.children, len(rankNode)) {
		return 0
	}
	r.childClient[r.lastJob] = childOf{client, c.children, rankNode}
	return r.lastJob
}

// childOf is a DVM child job's client's job, its number there, and the
// daemon of each of its ranks.
type childOf struct {
	client, ordinal int
	rankNode        []int
}

// ranksOn lists the ranks of rankNode on the daemons of ids.
func ranksOn(rankNode []int, ids map[int]bool) []int {
	var ranks []int
	for rank, id := range rankNode {
		if ids[id] {
			ranks = append(ranks, rank)
		}
	}
	return ranks
}
