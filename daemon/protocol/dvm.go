package protocol

import (
	"prsh/errmgr"
	"prsh/internal/timeouts"
	"prsh/modex"
	"prsh/modex/collective"
)

// The DVM (mpirun --dvm-start, DVM.md): the daemons stay up, and each job
// a client submits is a Launch of its own number. A job's failure ends
// that job alone (JobKill); its Exited at mpirun ends it everywhere
// (JobEnd), and each daemon lets go of its state. One job runs at a time:
// the per-job state is the machine's own fields, reset at JobEnd.

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

// dvmState is what a daemon of a DVM knows of its jobs.
type dvmState struct {
	now      int     // the job whose Launch came here, not yet released
	released int     // the last job released here
	killed   int     // the last job a JobKill named
	next     *Launch // the next job's Launch, held until the current one's JobEnd
}

// submitted launches a client's job from mpirun.
func (r *rootState) submitted(e Submit) {
	m := r.m
	if !m.job.DVM || m.ending() || m.dvm.now != 0 || e.Job <= m.dvm.released {
		m.warn("job %d submitted while the DVM cannot take it", e.Job)
		return
	}
	r.jobPolicy = errmgr.Policy{}
	r.jobTimeoutMS = e.TimeoutMS
	r.stopPending, r.stopFor = false, 0
	if e.TimeoutMS > 0 {
		m.emit(SetTimer{Timer{Kind: JobTimer, ID: e.Job}, e.TimeoutMS})
	}
	e.App.Job = e.Job
	r.launch(e.App)
}

// jobFailed ends the current job on its first failure; the DVM goes on.
func (r *rootState) jobFailed(f Failure) {
	m := r.m
	if f.Job == 0 || f.Job != m.dvm.now || !r.jobPolicy.Fail(f.Status) {
		return
	}
	m.emit(Print{Line: "mpirun: " + f.Msg, Job: f.Job})
	m.killJob(f.Job)
}

// jobTimedOut fails a job that ran past its --timeout.
func (r *rootState) jobTimedOut(job int) {
	r.jobFailed(Failure{
		Msg:    "the job ran past --timeout " + timeouts.Format(r.jobTimeoutMS) + ", terminating it",
		Status: errmgr.StatusTimeout, Job: job,
	})
}

// jobInterrupted fails a job whose client was interrupted or went away.
func (r *rootState) jobInterrupted(e JobInterrupt) {
	r.jobFailed(Failure{Msg: "caught SIG" + e.Name + ", terminating the job", Status: 128 + e.Sig, Job: e.Job})
}

// jobExited: the current job's ranks all ended: its status is final, and
// the job ends everywhere.
func (r *rootState) jobExited() {
	m := r.m
	job := m.dvm.now
	m.emit(CancelTimer{Timer{Kind: JobTimer, ID: job}})
	m.emit(JobDone{Job: job, Status: r.jobPolicy.Status()})
	m.endJob(job)
}

// dvmUp tells the driver once the daemons are all up.
func (r *rootState) dvmUp() {
	if r.m.milestones[Spawned].done && r.m.milestones[Addressed].done && !r.upSaid {
		r.upSaid = true
		r.m.emit(DVMUp{})
	}
}

// stopDVM ends the DVM: a job still running is killed, and its client
// hears why.
func (r *rootState) stopDVM() {
	m := r.m
	if job := m.dvm.now; job != 0 && !m.ending() && r.jobPolicy.Fail(errmgr.StatusFailed) {
		m.emit(Print{Line: "mpirun: the DVM is stopping (mpirun --dvm-stop), terminating the job", Job: job})
	}
	m.teardown(m.dvm.now != 0)
}

// killJob stops a job in this subtree: its ranks get SIGTERM, then
// SIGKILL after the kill grace. A job not launched here yet starts no
// rank when its Launch comes.
func (m *Machine) killJob(job int) {
	if job <= m.dvm.released || job <= m.dvm.killed || m.ending() {
		return
	}
	m.dvm.killed = job
	for _, c := range m.sortedChildren() {
		if c.linked() {
			m.emit(Send{c.link, JobKill{Job: job}})
		}
	}
	if job == m.dvm.now && m.launch == ranksStarted {
		m.emit(SignalRanks{SIGTERM})
		m.emit(SetTimer{Timer{Kind: GraceTimer}, m.job.KillGraceMS})
	}
}

// endJob ends a job in this subtree once it exited everywhere: what its
// ranks left behind is killed, its state let go of, and the next job's
// Launch, if it came first, taken.
func (m *Machine) endJob(job int) {
	if job != m.dvm.now || m.ending() {
		return
	}
	for _, c := range m.sortedChildren() {
		if c.linked() {
			m.emit(Send{c.link, JobEnd{Job: job}})
		}
	}
	m.emit(SignalRanks{SIGKILL})
	if m.dvm.killed == job {
		m.emit(CancelTimer{Timer{Kind: GraceTimer}})
	}
	m.emit(ReleaseJob{Job: job})
	m.resetJob(job)
	if next := m.dvm.next; next != nil {
		m.dvm.next = nil
		m.receiveLaunch(*next)
	}
}

// resetJob lets go of the per-job state: the next job starts as the
// first did.
func (m *Machine) resetJob(job int) {
	m.dvm.released, m.dvm.now = job, 0
	m.launch = launchAwaited
	m.app = Launch{}
	m.ranks = map[int]*rank{}
	m.earlyModex = nil
	m.view = modex.View{}
	m.coll = collective.New(m.root != nil)
	live := []int{}
	for _, c := range m.sortedChildren() {
		if !c.failed {
			live = append(live, c.id)
		}
	}
	m.milestones[Started] = newReduction(live)
	m.milestones[Exited] = newReduction(live)
}

// acceptLaunch says whether a Launch is this daemon's to take now; in a
// DVM, one for the next job while the current one has not ended here is
// held until it has.
func (m *Machine) acceptLaunch(app Launch) bool {
	if !m.job.DVM {
		return m.launch == launchAwaited
	}
	switch {
	case app.Job <= m.dvm.released || app.Job == m.dvm.now:
		return false // a repeat
	case m.dvm.now != 0:
		m.dvm.next = &app
		return false
	}
	m.dvm.now = app.Job
	return true
}

// jobKilledHere says the current job was killed before its ranks started.
func (m *Machine) jobKilledHere() bool {
	return m.job.DVM && m.dvm.killed == m.dvm.now
}

// jobFailure words a failure of a rank of the current job.
func (m *Machine) jobFailure(status int, format string, args ...any) Failure {
	f := m.failure(status, format, args...)
	f.Job = m.dvm.now
	return f
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
		if e.Job == r.m.dvm.now && !r.m.ending() {
			r.stopFor = e.Job
			r.passSignal(e.Sig)
		}
	}
}

// dvmMilestone moves the DVM on: up once spawned and addressed, a job
// over once its ranks all exited.
func (r *rootState) dvmMilestone(kind int) {
	switch kind {
	case Spawned, Addressed:
		r.dvmUp()
	case Exited:
		r.jobExited()
	}
}

// releasedJob says a message of job is stale: the job ended here.
func (m *Machine) releasedJob(job int) bool {
	return job != 0 && job <= m.dvm.released
}
