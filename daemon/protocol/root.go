package protocol

import (
	"maps"
	"slices"

	"prsh/errmgr"
	"prsh/internal/timeouts"
)

// role is what differs between mpirun (daemon 0) and an orted on the
// common path: what becomes of the reports of this daemon's subtree. An
// orted passes them to its parent (orted); mpirun acts on them
// (rootState), which also holds what only mpirun does: the failure
// policy, the nodes left out, the user's signals and the --timeout.
type role interface {
	fail(Failure)            // a failure here or below
	report(Skipped)          // a node left out below
	milestone(kind, job int) // the whole subtree reached a milestone (of job: Started, Exited)
	signalDelivered(seq int)
	subtreeUp() bool       // every daemon below called back (or was left out)
	firstReportMS() int64  // when the first progress report is due; 0: never
	reportPending(Pending) // the progress timer fired while daemons are missing
	waitOver()             // the launch is up, or the job ends: no more progress
	exitStatus() int
}

// orted is the role of every daemon but mpirun.
type orted struct {
	m           *Machine
	lastPending *Pending // the last Pending sent up
}

func (o *orted) fail(f Failure) {
	if o.m.ending() {
		return
	}
	if j, ok := o.m.jobs[f.Job]; f.Job != 0 && (!ok || j.killed) {
		return // its job is being killed, or over here
	}
	o.m.sendUp(f)
}

func (o *orted) report(s Skipped) { o.m.sendUp(s) }

func (o *orted) milestone(kind, job int) { o.m.sendUp(Milestone{Kind: kind, Job: job}) }

func (o *orted) signalDelivered(seq int) { o.m.sendUp(SignalAck{Seq: seq}) }

// subtreeUp: phase 2 reported this subtree up.
func (o *orted) subtreeUp() bool { return o.m.flood.ReportedUp() }

// firstReportMS: a leaf has no subtree to report on.
func (o *orted) firstReportMS() int64 {
	if len(o.m.cfg.Nodes) == 0 {
		return 0
	}
	return PendingReportMS
}

// reportPending tells the parent who is missing below, when that changed.
func (o *orted) reportPending(p Pending) {
	if o.lastPending == nil || !samePending(*o.lastPending, p) {
		o.lastPending = &p
		o.m.sendUp(p)
	}
	o.m.emit(SetTimer{Timer{Kind: ProgressTimer}, PendingReportMS})
}

func (o *orted) waitOver() {}

// exitStatus: an orted's failures went up to mpirun, which owns the job's
// status.
func (o *orted) exitStatus() int { return 0 }

// rootState is mpirun's role and its own state; Machine.root is nil on
// an orted.
type rootState struct {
	m         *Machine
	policy    errmgr.Policy // how the job (a DVM: the DVM) ends
	skipped   map[int]bool  // daemons left out
	signalSeq int
	// stops are the jobs whose Ctrl-Z waits for their ranks to stop
	// (0: mpirun's own), then stops mpirun or the job's client; stopSeq
	// is the job of each SIGSTOP sent, by Signal.Seq.
	stops       map[int]bool
	stopSeq     map[int]int
	waitShown   bool // the Waiting line is shown
	interrupted bool // mpirun got SIGINT, SIGTERM or SIGHUP
	upSaid      bool // a DVM's DVMUp went out (dvm.go)
	// lostSaid are the daemons whose loss the DVM took (dvmlost.go).
	lostSaid map[int]bool
	// children are the child jobs (childjobs.go) from their placing to
	// their end; placing counts the requests the driver is placing.
	children map[int]*childJob
	placing  int
	// asked are the requests the driver is placing; parked, those that
	// wait for slots (lastWait numbers their waits); replacing, the one
	// of them being placed again.
	asked     map[placeKey]ChildJobRequest
	parked    []parkedChildJob
	lastWait  int
	replacing placeKey
	// ordinals counts each DVM client's child jobs, by its job.
	ordinals map[int]int
	names    *nameService // the published names (names.go), once used
}

// start sets the --timeout.
func (r *rootState) start() {
	if r.m.cfg.TimeoutMS > 0 {
		r.m.emit(SetTimer{Timer{Kind: JobTimer}, r.m.cfg.TimeoutMS})
	}
}

// launch starts phase 3 from mpirun, where the Launch is made.
func (r *rootState) launch(app Launch) {
	app.RanksByNode = slices.IsSorted(app.RankNode)
	if r.m.job.Planned > 0 {
		app.Added = r.m.job.Hosts[r.m.job.Planned:]
	}
	app.Sparse = r.sparse(app)
	r.m.receiveLaunch(app)
}

// sparse says whether a job goes only where its ranks are (Launch.Sparse):
// a DVM client's job without PMIx, adding no daemon, that leaves some
// live orted without a rank.
func (r *rootState) sparse(app Launch) bool {
	m := r.m
	if !m.job.DVM || app.Job == 0 || app.Parent != nil || !app.NoPMIx || len(app.Added) > 0 {
		return false
	}
	holds := app.RankNode.Holders(m.job.Daemons)
	for d := 1; d < len(holds); d++ {
		if !holds[d] && !m.lost[d] {
			return true
		}
	}
	return false
}

// fail ends the job on the first failure.
func (r *rootState) fail(f Failure) {
	f = r.childFailed(f)
	if r.m.job.DVM && f.Job != 0 {
		r.jobFailed(f)
		return
	}
	if f.Lost > 0 && r.daemonLost(f) {
		return
	}
	if !r.policy.Fail(f.Status) {
		return
	}
	r.waitOver()
	r.m.emit(Print{Line: "mpirun: " + f.Msg})
	for _, j := range r.m.sortedJobs() { // a DVM ends, and its jobs: their clients hear why
		if j.num != 0 && r.children[j.num] == nil && j.policy.Fail(f.Status) {
			r.m.emit(Print{Line: "mpirun: " + f.Msg, Job: j.num})
		}
	}
	r.m.teardown(true)
}

// cancelled: Slurm cancelled the job step of a child (its time limit,
// scancel), whose orted and ranks all got SIGTERM. Ranks that exited 0
// on it, reported before the orted's own SIGTERM was, did not succeed:
// the job fails with the orted's line, unless it failed already.
func (r *rootState) cancelled(f Failure) {
	if !r.policy.Overturn(f.Status) {
		return
	}
	r.waitOver()
	r.m.emit(Print{Line: "mpirun: " + f.Msg})
	r.m.teardown(true)
}

// report warns the user and leaves the node out of the job map.
func (r *rootState) report(s Skipped) {
	r.skipped[s.ID] = true
	line := "mpirun: warning: " + s.Msg + " (left out: --on-unreachable skip)"
	r.m.emit(Print{Line: line})
	if r.m.job.DVM {
		r.dvmSkipped(s.ID, line)
	}
}

// milestone moves the job on.
func (r *rootState) milestone(kind, job int) {
	m := r.m
	m.emit(Reached{kind, job})
	if kind == Spawned {
		m.checkSubtreeUp()
	}
	if kind == Exited {
		defer r.placeParked() // the job's slots are free: a waiting child job may fit
	}
	if m.job.DVM {
		r.dvmMilestone(kind, job)
		return
	}
	switch {
	case kind == Spawned && m.job.launchesAfterSpawn() && !m.ending():
		r.launchSurvivors()
	case kind == Started && job != 0:
		r.childStarted(job)
	case kind == Started:
		m.emit(ForwardStdin{})
	case kind == Exited && job != 0:
		r.childExited(job)
	case kind == Exited:
		r.maybeAllExited()
	}
}

// launchSurvivors starts the application on the nodes that came up, once
// phase 1 is over everywhere (--on-unreachable skip, or --hold-launch).
func (r *rootState) launchSurvivors() {
	app := r.m.cfg.App
	if len(r.skipped) > 0 {
		rankNode, err := r.m.cfg.Remap(r.skipped)
		if err != nil {
			r.fail(Failure{Msg: err.Error(), Status: errmgr.StatusFailed})
			return
		}
		app.RankNode = rankNode
	}
	r.launch(app)
}

// signalDelivered: the only signal mpirun asks to be acknowledged is
// Ctrl-Z's SIGSTOP.
func (r *rootState) signalDelivered(seq int) {
	job, ok := r.stopSeq[seq]
	delete(r.stopSeq, seq)
	if ok && !slices.Contains(slices.Collect(maps.Values(r.stopSeq)), job) { // its child jobs' acks too
		r.stopSelf(job)
	}
}

// subtreeUp: phase 2 is complete here, or phase 1 everywhere, whichever
// mpirun learns first.
func (r *rootState) subtreeUp() bool {
	return r.m.flood.Complete() || r.m.milestones[Spawned].done
}

func (r *rootState) firstReportMS() int64 { return WaitingShowMS }

// reportPending shows the user who the launch waits for.
func (r *rootState) reportPending(p Pending) {
	r.waitShown = true
	r.m.emit(Waiting{r.waitingLine(p)})
	r.m.emit(SetTimer{Timer{Kind: ProgressTimer}, WaitingEveryMS})
}

// waitOver removes the Waiting line if it is shown: the launch is up, or
// a line saying why the job ends takes its place.
func (r *rootState) waitOver() {
	if r.waitShown {
		r.waitShown = false
		r.m.emit(Waiting{})
	}
}

func (r *rootState) exitStatus() int { return r.policy.Status() }

// interrupt handles a signal delivered to mpirun.
func (r *rootState) interrupt(sig int, name string) {
	switch sig {
	case SIGINT, SIGTERM, SIGHUP:
		// A SIGTERM that is mpirun's first signal leaves a job already
		// ending its grace: a batch system's TERM reaches mpirun and the
		// daemons alike (at Slurm's time limit an orted's report of it
		// may come first), and means "end", not "now". Any other signal
		// to a job that is ending (a second Ctrl-C) means now.
		first := !r.interrupted
		r.interrupted = true
		if r.m.ending() {
			if !(first && sig == SIGTERM) {
				r.killEverything()
			}
			return
		}
		r.fail(Failure{Msg: "caught SIG" + name + ", terminating the job", Status: 128 + sig})
	default:
		r.passSignal(sig, 0)
	}
}

// passSignal passes a signal on to the ranks (of job, in a DVM; 0: every
// rank); Ctrl-Z stops them, and then whoever got it (stopSelf).
// A DVM job's signal reaches its child jobs' ranks too.
func (r *rootState) passSignal(sig, job int) {
	jobs := []int{job}
	if job != 0 {
		jobs = r.family(job)
	}
	if sig != SIGTSTP {
		for _, j := range jobs {
			r.signalSeq++
			r.m.signal(Signal{Sig: sig, Seq: r.signalSeq, Job: j})
		}
		return
	}
	r.stops[job] = true
	r.m.emit(SetTimer{Timer{Kind: StopTimer, ID: job}, r.m.job.Timeouts.StopWaitMS})
	for _, j := range jobs {
		r.signalSeq++
		r.stopSeq[r.signalSeq] = job
		r.m.signal(Signal{Sig: SIGSTOP, Ack: true, Seq: r.signalSeq, Job: j})
	}
}

// stopSelf stops mpirun after its ranks, as Ctrl-Z asks (in a DVM, the
// job's client, when it was its Ctrl-Z); fg or bg sends it SIGCONT, which
// it passes on to the ranks.
func (r *rootState) stopSelf(job int) {
	if r.m.ending() || !r.stops[job] {
		return
	}
	r.forgetStop(job)
	if job != 0 {
		r.m.emit(JobStopped{Job: job})
		return
	}
	r.waitOver() // the shell's prompt follows; the timer shows it again after fg
	r.m.emit(StopSelf{})
}

// forgetStop lets go of job's Ctrl-Z: it is done, or the job is over.
func (r *rootState) forgetStop(job int) {
	if !r.stops[job] {
		return
	}
	delete(r.stops, job)
	for seq, j := range r.stopSeq { // acks that will not come now
		if j == job {
			delete(r.stopSeq, seq)
		}
	}
	r.m.emit(CancelTimer{Timer{Kind: StopTimer, ID: job}})
}

// timerFired handles the timers only mpirun sets.
func (r *rootState) timerFired(t Timer) {
	switch t.Kind {
	case DrainTimer:
		r.giveUp()
	case JobTimer:
		if r.m.job.DVM {
			r.jobTimedOut(t.ID)
			return
		}
		r.fail(Failure{Msg: "the job ran past --timeout " + timeouts.Format(r.m.cfg.TimeoutMS) + ", terminating it", Status: errmgr.StatusTimeout})
	case StopTimer:
		r.stopSelf(t.ID)
	}
}

// giveUp ends mpirun when some daemons did not finish in time.
func (r *rootState) giveUp() {
	late := []string{}
	for _, c := range r.m.children {
		if !c.drained() {
			late = append(late, c.host)
		}
	}
	slices.Sort(late)
	status := r.policy.Status()
	if status == 0 {
		status = errmgr.StatusFailed
	}
	r.m.exit(Exit{Status: status, Abandon: true, Late: late})
}

// killEverything answers a second interrupt: no more grace.
func (r *rootState) killEverything() {
	m := r.m
	for _, c := range m.sortedChildren() {
		if c.linked() {
			m.emit(Send{c.link, Teardown{Kill: true}})
		}
		if c.running() {
			m.stopDaemon(c)
		}
	}
	m.emit(SignalRanks{SIGKILL, AllJobs})
	m.exit(Exit{Status: r.policy.Status(), Abandon: true})
}
