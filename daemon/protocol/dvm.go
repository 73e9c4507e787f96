package protocol

import (
	"prsh/errmgr"
	"prsh/internal/timeouts"
)

// The DVM (mpirun --dvm-start, DVM.md): the daemons stay up, and each job
// a client submits is a Launch of its own number. A job's failure ends
// that job alone (JobKill); its Exited at mpirun ends it everywhere
// (JobEnd), and each daemon lets go of its state. Jobs run at once, each
// with its own state (jobs.go).

// Submit: a client submitted a job to the DVM (mpirun only).
type Submit struct {
	Job       int // its number, from 1, one more than the last
	App       Launch
	TimeoutMS int64 // its --timeout; 0 = never
}

// JobInterrupt: the client of Job got signal Sig (named without SIG), or
// went away (SIGHUP): that job ends.
type JobInterrupt struct {
	Job  int
	Sig  int
	Name string
}

// StopDVM: a client asked the DVM to stop (mpirun --dvm-stop).
type StopDVM struct{}

// JobSignal: the client of Job got signal Sig, which its ranks get:
// SIGTSTP stops them (then JobStopped), any other is passed on.
type JobSignal struct{ Job, Sig int }

func (Submit) event()       {}
func (JobInterrupt) event() {}
func (StopDVM) event()      {}
func (JobSignal) event()    {}

// DVMUp: every daemon of the DVM called back and knows every address:
// clients may submit.
type DVMUp struct{}

// JobDone: job Job's ranks all ended; Status is its exit status.
type JobDone struct{ Job, Status int }

// JobStopped: the ranks of Job are stopped (or the stop wait ran out):
// its client stops itself.
type JobStopped struct{ Job int }

// ReleaseJob: job Job is over here: let go of everything it held (its
// ranks' starter, their PMI services).
type ReleaseJob struct{ Job int }

func (DVMUp) action()      {}
func (JobDone) action()    {}
func (ReleaseJob) action() {}
func (JobStopped) action() {}

// submitted launches a client's job from mpirun.
func (r *rootState) submitted(e Submit) {
	m := r.m
	if !m.job.DVM || m.ending() || m.released.has(e.Job) || m.jobs[e.Job] != nil {
		m.warn("job %d submitted while the DVM cannot take it", e.Job)
		return
	}
	j := m.jobOf(e.Job)
	j.timeoutMS = e.TimeoutMS
	if e.TimeoutMS > 0 {
		m.emit(SetTimer{Timer{Kind: JobTimer, ID: e.Job}, e.TimeoutMS})
	}
	e.App.Job = e.Job
	r.launch(e.App)
}

// jobFailed ends a job on its first failure; the DVM and its other jobs
// go on.
// A child job's failure ends its client's job and every child of it.
func (r *rootState) jobFailed(f Failure) {
	m := r.m
	client := r.clientJob(f.Job)
	j, ok := m.jobs[client]
	if !ok || !j.policy.Fail(f.Status) {
		return
	}
	m.emit(Print{Line: "mpirun: " + f.Msg, Job: client})
	for _, job := range r.family(client) {
		m.killJob(job)
	}
}

// jobTimedOut fails a job that ran past its --timeout.
func (r *rootState) jobTimedOut(job int) {
	j, ok := r.m.jobs[job]
	if !ok {
		return
	}
	r.jobFailed(Failure{
		Msg:    "the job ran past --timeout " + timeouts.Format(j.timeoutMS) + ", terminating it",
		Status: errmgr.StatusTimeout, Job: job,
	})
}

// jobInterrupted fails a job whose client was interrupted or went away.
func (r *rootState) jobInterrupted(e JobInterrupt) {
	r.jobFailed(Failure{Msg: "caught SIG" + e.Name + ", terminating the job", Status: 128 + e.Sig, Job: e.Job})
}

// jobExited: a job's ranks all ended: a client's job's status is final
// once its child jobs ended too, and the job ends everywhere.
func (r *rootState) jobExited(job int) {
	if _, ok := r.children[job]; ok {
		r.childExited(job)
		return
	}
	r.clientJobExited(job)
}

// clientJobExited ends a client's job whose ranks all ended, once no
// child job of it runs.
func (r *rootState) clientJobExited(job int) {
	m := r.m
	j, ok := m.jobs[job]
	if !ok || !j.exited.done || len(r.family(job)) > 1 {
		return
	}
	delete(r.ordinals, job)
	m.emit(CancelTimer{Timer{Kind: JobTimer, ID: job}})
	m.emit(JobDone{Job: job, Status: j.policy.Status()})
	m.endJob(job)
}

// dvmUp tells the driver once the daemons are all up.
func (r *rootState) dvmUp() {
	if r.m.milestones[Spawned].done && r.m.milestones[Addressed].done && !r.upSaid && !r.m.ending() {
		r.upSaid = true
		r.m.emit(DVMUp{})
	}
}

// stopDVM ends the DVM: the jobs still running are killed, and their
// clients hear why.
func (r *rootState) stopDVM() {
	m := r.m
	for _, j := range m.sortedJobs() {
		if r.children[j.num] == nil && !m.ending() && j.policy.Fail(errmgr.StatusFailed) {
			m.emit(Print{Line: "mpirun: the DVM is stopping (mpirun --dvm-stop), terminating the job", Job: j.num})
		}
	}
	m.teardown(len(m.jobs) > 0)
}

// killJob stops a job in this subtree: its ranks get SIGTERM, then
// SIGKILL after the kill grace. A job not launched here yet starts no
// rank when its Launch comes.
func (m *Machine) killJob(job int) {
	j := m.jobOf(job)
	if j == nil || j.killed || m.ending() {
		return
	}
	j.killed = true
	for _, c := range m.jobChildren(j) {
		m.emit(Send{c.link, JobKill{Job: job}})
	}
	if j.launch == ranksStarted {
		m.emit(SignalRanks{SIGTERM, job})
		m.emit(SetTimer{Timer{Kind: GraceTimer, ID: job}, m.job.KillGraceMS})
	}
}

// endJob ends a job in this subtree once it exited everywhere: what its
// ranks left behind is killed and its state let go of.
func (m *Machine) endJob(job int) {
	j, ok := m.jobs[job]
	if !ok || job == 0 || m.ending() {
		return
	}
	for _, c := range m.jobChildren(j) {
		m.emit(Send{c.link, JobEnd{Job: job}})
	}
	m.emit(SignalRanks{SIGKILL, job})
	if j.killed {
		m.emit(CancelTimer{Timer{Kind: GraceTimer, ID: job}})
	}
	m.emit(ReleaseJob{Job: job})
	if m.root != nil {
		m.root.forgetStop(job)
		m.namesOfJobEnded(job)
	}
	delete(m.jobs, job)
	m.released.add(job)
}

// acceptLaunch is the job a Launch starts here, or nil when it is not
// this daemon's to take: a repeat, or a job over here.
func (m *Machine) acceptLaunch(app Launch) *jobState {
	j := m.jobOf(app.Job)
	if j == nil || j.launch != launchAwaited {
		return nil
	}
	return j
}

// dvmMessage handles JobKill and JobEnd from the parent.
func (m *Machine) dvmMessage(msg Message) {
	switch msg := msg.(type) {
	case JobKill:
		m.killJob(msg.Job)
	case JobEnd:
		m.endJob(msg.Job)
	}
}

// dvmEvent takes a client's event at mpirun.
func (r *rootState) dvmEvent(ev Event) {
	switch e := ev.(type) {
	case Submit:
		r.submitted(e)
	case JobInterrupt:
		r.jobInterrupted(e)
	case StopDVM:
		r.stopDVM()
	case JobSignal:
		if _, ok := r.m.jobs[e.Job]; ok && !r.m.ending() {
			r.passSignal(e.Sig, e.Job)
		}
	}
}

// dvmMilestone moves the DVM on: up once spawned and addressed, a job
// over once its ranks all exited.
func (r *rootState) dvmMilestone(kind, job int) {
	switch kind {
	case Spawned, Addressed:
		r.dvmUp()
	case Started:
		r.childStarted(job)
	case Exited:
		r.jobExited(job)
	}
}
