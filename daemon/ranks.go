package daemon

import (
	"os"
	"slices"
	"time"

	"prsh/daemon/protocol"
	"prsh/internal/gcburst"
	"prsh/iof"
	"prsh/modex"
	"prsh/modex/pmi"
	"prsh/ranks"
)

// rank is one local rank as the PMI bridge knows it; the ranks package
// starts, guards and reaps its process.
type rank struct {
	id       int
	pmi      *pmiService   // its PMI service, once started
	pmiDone  chan struct{} // closed when the server of its inherited PMI socket has returned
	portDone chan struct{} // closed when the server of its PMI_PORT connection has returned
	portID   string        // its PMI_ID, a secret; "" without a PMI_PORT
}

// startRanks starts this daemon's share of a job's ranks, each with its
// PMI service; a rank that could not start is the machine's next event.
func (d *Daemon) startRanks(app protocol.Launch, mine []int) {
	jr := d.newJobRanks(app.Job, app)
	d.stdinTree.SetJobRanks(app.Job, app.RankNode)
	d.startPMIx(app, mine)
	d.openPMIPort(len(mine))
	// Nodes are numbered from 1 as daemons are, unless mpirun (daemon 0)
	// runs its node's ranks: then each is one more than its daemon.
	skip := 1
	if slices.Contains(app.RankNode, 0) {
		skip = 0
	}
	req := ranks.Request{
		Node: d.cfg.Node, Daemon: d.name(), NodeID: d.cfg.ID + 1 - skip, Size: len(app.RankNode), Nodes: d.machine.Job().Daemons - skip, Bind: app.Bind,
		MergeStderr: app.MergeStderr, Output: d.outputOf(app.Job), Input: d.stdinTree.Job(app.Job),
		Attach:       func(id int) (ranks.Attachment, error) { return d.attach(jr, id) },
		GuardStopped: ms(d.cfg.Timeouts.GuardStoppedMS),
	}
	if len(mine) >= gcburst.Many {
		defer gcburst.Begin()()
	}
	mapping := modex.ProcessMapping(app.RankNode)
	for _, id := range mine {
		jr.ranks[id] = &rank{id: id, pmi: d.newPMIService(jr, id, mapping), pmiDone: make(chan struct{}), portDone: make(chan struct{})}
		req.Ranks = append(req.Ranks, d.rankToStart(app, id))
	}
	for _, failed := range jr.starter.Start(req) {
		d.pmiNeverStarted(jr.ranks[failed.Rank])
		d.outputNeverStarted(app.Job, failed.Rank)
		d.next = append(d.next, protocol.RankNotStarted{Job: app.Job, Rank: failed.Rank, Status: failed.Status, Err: failed.Err})
	}
}

// rankToStart is rank id's program (MPMD: each rank runs its own app
// context), the staged copy where there is one, with Open MPI's defaults
// before the job's -x, which may change them.
func (d *Daemon) rankToStart(launch protocol.Launch, id int) ranks.Rank {
	app, appNum := launch.AppOf(id)
	env := append(append(os.Environ(), openMPIEnv...), app.Env...)
	prog := ranks.Program{Argv: app.Argv, Dir: app.Wdir, DirSet: app.WdirSet, Env: d.stagedLibraryPath(env)}
	if len(app.Argv) > 0 {
		prog.Path, _ = d.stagedProgram(app.Argv[0])
	}
	stdin := launch.StdinRank == protocol.StdinAll || launch.StdinRank == id
	return ranks.Rank{ID: id, AppNum: appNum, Stdin: stdin, Program: prog}
}

// attach gives rank id of job jr its PMI socket and the variables of its
// PMI, PMI_PORT and PMIx clients; the rank's end of it is served once the
// rank runs, and read to its end before its exit is reported.
func (d *Daemon) attach(jr *jobRanks, id int) (ranks.Attachment, error) {
	r := jr.ranks[id]
	conn, pmiEnd, err := pmiSocket()
	if err != nil {
		return ranks.Attachment{}, err
	}
	env := slices.Concat(pmiEnv(d.machine.Job(), jr.app, id), d.pmiPortEnv(r), pmi.SpawnedEnv(r.pmi.info))
	pmixEnv, ns, err := d.pmixEnvOf(jr, id)
	if err != nil {
		conn.Close()
		pmiEnd.Close()
		return ranks.Attachment{}, err
	}
	return ranks.Attachment{
		Files:   []*os.File{pmiEnd},
		Env:     append(env, pmixEnv...),
		Started: func() { d.servePMI(conn, r) },
		Failed:  func() { conn.Close() },
		Ended:   func(status int) { d.awaitPMI(r); d.settlePMIx(ns, id, status) },
	}, nil
}

// rankEvent tells the machine what became of a started rank of job.
func (d *Daemon) rankEvent(job int, ev ranks.Event) {
	switch e := ev.(type) {
	case ranks.Exited:
		d.step(protocol.RankExited{Job: job, Rank: e.Rank, Status: e.Status, How: e.How})
	case ranks.Drained:
		d.step(protocol.RankDrained{Job: job, Rank: e.Rank})
	}
}

// awaitPMI waits until the server of the rank's PMI connection has read
// everything, so that the machine learns how the rank used PMI
// (finalised or not, bad input) before it learns that the rank ended.
// The inherited socket is read to its end first, unless a PMI_PORT
// connection speaks for the rank: what the rank wrote there before it
// died may yet make it the speaker. Then no connection may claim the
// rank any more.
func (d *Daemon) awaitPMI(r *rank) {
	if r.pmi == nil {
		return
	}
	if r.pmi.speaker() != viaPort {
		d.drainPMI(r, r.pmiDone)
	}
	switch r.pmi.seal() {
	case viaPort:
		d.drainPMI(r, r.portDone)
	case nobody:
		r.pmi.stop()
	}
	d.forgetPMIPortID(r)
}

// drainPMI waits for a server to return, at most the job's PMI drain
// bound: something the rank left behind may hold its socket open, and
// the server is then stopped. A server
// waiting in a collective for the dead rank has nothing left to read: it
// is stopped at once.
func (d *Daemon) drainPMI(r *rank, done <-chan struct{}) {
	wait := ms(d.cfg.Timeouts.PMIDrainMS)
	if r.pmi.waiting.Load() {
		wait = 0
	}
	select {
	case <-done:
	case <-time.After(wait):
		r.pmi.stop()
		<-done
	}
}

// outputNeverStarted ends, in a DVM, the output streams of a rank that
// could not start: mpirun answers a job's client once every stream of
// the job has ended.
func (d *Daemon) outputNeverStarted(job, rank int) {
	if !d.machine.Job().DVM {
		return
	}
	out := d.outputOf(job)
	go func() {
		out.Send(iof.Chunk{Rank: rank, Stream: iof.Stdout, EOF: true})
		out.Send(iof.Chunk{Rank: rank, Stream: iof.Stderr, EOF: true})
	}()
}

// releaseJob lets go of a DVM job's ranks: their starter (the guard
// kills what they left and stays, the job cgroup goes), the PMI bridge's
// records and waiters, their stdin pipes.
func (d *Daemon) releaseJob(job int) {
	if jr, ok := d.jobs[job]; ok {
		jr.starter.Close()
		delete(d.jobs, job)
	}
	d.stdinTree.ForgetJob(job)
}
