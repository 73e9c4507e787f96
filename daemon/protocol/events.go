package protocol

import (
	"prsh/modex"
	"prsh/spawn"
)

// LinkID names one connection to another daemon; the driver picks it.
// There may be two links to the same peer for a moment (both dialled at
// once); the machine sends on one.
type LinkID int

// Event is something the driver saw: Step takes one at a time.
type Event interface{ event() }

// LinkUp: a connection to Peer is ready, either accepted (its Hello read)
// or dialled after a Dial.
type LinkUp struct {
	Link LinkID
	Peer int
}

// LinkDown: the connection ended; Err says how. Silent: the peer stopped
// answering (nothing came from it for the transport's silence bound): it
// hangs, or is stopped.
type LinkDown struct {
	Link   LinkID
	Err    string
	Silent bool
}

// Received: a message arrived on a link.
type Received struct {
	Link LinkID
	Msg  Message
}

// DialFailed: a Dial did not get through.
type DialFailed struct {
	Peer int
	Err  string
}

// SpawnStarted: the launch agent started the orted of child ID, which
// should now call back.
type SpawnStarted struct{ ID int }

// DaemonAlive: the orted of child ID runs: it gave its sign of life (a
// line on its session's stdout) before calling back.
type DaemonAlive struct{ ID int }

// SpawnFailed: the launch agent could not start child ID; Err is worded
// for the user.
type SpawnFailed struct {
	ID  int
	Err string
}

// DaemonExited: the launch agent's process for child ID ended (for a
// healthy child, only once the job is over); Err is how ("exit status 0").
// Orphaned: it exited with OrphanStatus, having lost its lifeline.
// Cancelled: Slurm cancelled the job step it ran in (scancel, the time
// limit), so its orted got SIGTERM, whether or not it said so in time.
type DaemonExited struct {
	ID        int
	Err       string
	Orphaned  bool
	Cancelled bool
}

// OutputOpened and OutputClosed: a child opened or finished the stream
// that carries its subtree's output.
type OutputOpened struct{ Link LinkID }
type OutputClosed struct{ Link LinkID }

// RankNotStarted: a rank of a StartRanks could not start; Status is what
// a shell would say (127 not found, 126 not executable).
type RankNotStarted struct {
	Job    int // the DVM job of the rank; 0 in a plain mpirun
	Rank   int
	Status int
	Err    string
}

// RankExited: a local rank was reaped. Status is the shell's view (128+N
// for signal N); How words it for the user ("exited with status 3").
type RankExited struct {
	Job    int
	Rank   int
	Status int
	How    string
}

// Staged: this node's copy of every JobSpec.Stage file is complete and
// checked; Err, worded for the user, says why it is not.
type Staged struct{ Err string }

// RankDrained: everything a rank wrote has been read and passed on.
type RankDrained struct{ Job, Rank int }

// PMIFinalize: a local rank finalised PMI.
type PMIFinalize struct{ Job, Rank int }

// PMIUnserved: a local rank's client speaks a PMI this daemon cannot
// serve (Why says which, and what to do): the job cannot go on.
type PMIUnserved struct {
	Job  int
	Rank int
	Why  string
}

// DirectModexWanted: a local rank wants what Rank (of another daemon)
// put and no fence brought here; ID names the request for the driver.
type DirectModexWanted struct{ ID, Job, Rank int }

// ModexServed: this daemon's PMIx server answered daemon From's request
// ID for one of the local ranks' data.
type ModexServed struct {
	ID, From int
	Data     []byte
	Err      string
}

// PMIConnected: a local rank's PMI client connected (PMIx says so before
// any collective): from now on the rank must finalise before it exits.
type PMIConnected struct{ Job, Rank int }

// PMIEnded: a local rank's PMI connection ended before it finalised:
// Used, it had spoken PMI; Err, what was wrong with its input. The driver
// reports it before the rank's RankExited.
type PMIEnded struct {
	Job  int
	Rank int
	Used bool
	Err  string
}

// FenceEntered: a local rank entered its next fence, with what it put
// since its last one. A rank that fenced uses PMI: it must finalise it
// before it exits.
type FenceEntered struct {
	Job  int
	Rank int
	Puts []modex.KV
	// Group lists the ranks of a fence over part of the job (PMIx_Fence
	// with a list of processes), sorted; nil for the whole job.
	Group []int
	// Across lists the ranks of a fence over several jobs (PMIx_Connect,
	// PMIx_Disconnect, a PMIx_Fence over several namespaces), by job
	// number (connect.go); Group is then nil.
	Across []JobRanks
}

// AllgatherEntered: a local rank entered its next allgather with its
// value.
type AllgatherEntered struct {
	Job   int
	Rank  int
	Value string
}

// RingEntered: a local rank entered its next PMIX_Ring with its count and
// its two values.
type RingEntered struct {
	Job         int
	Rank        int
	Count       int
	Left, Right string
}

// Aborted: a local rank asked to abort the job (MPI_Abort).
type Aborted struct {
	Job    int
	Rank   int
	Status int
	Msg    string
}

// TimerFired: a timer set with SetTimer expired.
type TimerFired struct{ Timer Timer }

// Interrupt: the daemon received signal Sig (its name without SIG:
// "INT"): any at mpirun, SIGTERM at an orted.
type Interrupt struct {
	Sig  int
	Name string
}

// Orphaned: an orted's lifeline ended: the session of its parent is gone.
type Orphaned struct{ Why string }

// CannotContinue: this daemon cannot go on with the job; Err says why, in
// words (a listener that stopped accepting: no descriptor left).
type CannotContinue struct{ Err string }

func (LinkUp) event()            {}
func (LinkDown) event()          {}
func (Received) event()          {}
func (DialFailed) event()        {}
func (SpawnStarted) event()      {}
func (DaemonAlive) event()       {}
func (SpawnFailed) event()       {}
func (DaemonExited) event()      {}
func (OutputOpened) event()      {}
func (OutputClosed) event()      {}
func (RankNotStarted) event()    {}
func (RankExited) event()        {}
func (RankDrained) event()       {}
func (Staged) event()            {}
func (TimerFired) event()        {}
func (PMIFinalize) event()       {}
func (PMIConnected) event()      {}
func (PMIUnserved) event()       {}
func (DirectModexWanted) event() {}
func (ModexServed) event()       {}
func (PMIEnded) event()          {}
func (FenceEntered) event()      {}
func (Aborted) event()           {}
func (RingEntered) event()       {}
func (AllgatherEntered) event()  {}
func (Interrupt) event()         {}
func (Orphaned) event()          {}
func (CannotContinue) event()    {}

// Action is what the machine asks its driver to do, in order.
type Action interface{ action() }

// Send queues Msg on a link; it never blocks the machine.
type Send struct {
	Link LinkID
	Msg  Message
}

// Dial connects to a daemon at Addr; the result is LinkUp or DialFailed.
type Dial struct {
	Peer int
	Addr string
}

// CloseLink closes a link that is not wanted.
type CloseLink struct{ Link LinkID }

// Spawn starts the orted of Node through the launch agent; the result is
// SpawnStarted or SpawnFailed, then LinkUp when it calls back.
type Spawn struct{ Node spawn.Node }

// SpawnStep starts the orteds of Nodes at once, with one agent call (one
// Slurm job step, JobSpec.OneStep); each node's result comes back as for
// Spawn, per node.
type SpawnStep struct{ Nodes []spawn.Node }

// StopDaemon ends the launch agent's process for child ID (its ssh
// session), for a child that will never take part. Kill: the child may
// be unable to end by itself (it stopped answering, or never called
// back) and has no rank guard to kill it, so the agent kills it first.
type StopDaemon struct {
	ID   int
	Kill bool
}

// ForwardInput: a spawn child connected on Link; the part of mpirun's
// stdin for ranks in its subtree goes to it from now on.
type ForwardInput struct {
	Child int
	Link  LinkID
}

// StageTo: a spawn child connected on Link; the staged files go to it,
// from this daemon's copy as it is written (mpirun: the originals).
type StageTo struct {
	Child int
	Link  LinkID
}

// StartRanks starts this daemon's ranks of App (possibly none: App still
// tells where every rank lives, for stdin). Each ends with RankNotStarted,
// or RankExited and RankDrained.
type StartRanks struct {
	App   Launch
	Ranks []int
}

// SignalRanks sends Sig to the process group of every local rank of Job
// (AllJobs: of every job), reaped or not: what a rank left behind in its
// group gets it too.
type SignalRanks struct{ Sig, Job int }

// AllJobs in SignalRanks names the ranks of every job: the daemon ends.
const AllJobs = -1

// SetTimer starts (or restarts) Timer, to fire after MS milliseconds.
type SetTimer struct {
	Timer Timer
	MS    int64
}

// CancelTimer stops Timer if it has not fired.
type CancelTimer struct{ Timer Timer }

// Print writes one line to mpirun's stderr, for the user; in a DVM, a
// line of Job (> 0) goes to that job's client instead.
type Print struct {
	Line string
	Job  int
}

// Waiting is mpirun's launch progress: Line says how many daemons called
// back and names those still missing, to be shown in place of the last
// one; "" says the wait is over (every daemon called back, or the job
// ends), and the line goes away.
type Waiting struct{ Line string }

// Warn logs a line at this daemon (not for the user's terminal).
type Warn struct{ Line string }

// Reached: mpirun saw the whole job (Started, Exited: DVM job Job) reach
// a milestone.
type Reached struct{ Kind, Job int }

// ForwardStdin: mpirun starts passing its stdin to the ranks.
type ForwardStdin struct{}

// StopSelf: mpirun stops itself (SIGSTOP), its ranks being stopped.
type StopSelf struct{}

// FenceDone: fence Seq is complete; the local ranks in it go on, and
// answer their gets from View. Gone lists the ranks that left before
// entering it, which fails it.
type FenceDone struct {
	Job  int
	Seq  int
	View modex.View
	// A group's fence (FenceEntered.Group), by GroupName, or over
	// several jobs (FenceEntered.Across, by AcrossName, Job its first):
	// its result is Puts, not added to View; Gone lists its members (a
	// group over several jobs: member numbers).
	Group string
	Puts  []modex.KV
	Gone  []int
}

// ServeModex: ask this daemon's PMIx server for local rank Rank's data,
// for daemon From's request ID; answer with ModexServed.
type ServeModex struct{ ID, From, Job, Rank int }

// ModexAnswered: the answer to this daemon's direct-modex request ID.
type ModexAnswered struct {
	ID   int
	Data []byte
	Err  string
}

// AllgatherDone: allgather Seq is complete: every rank's value, in rank
// order, for each local rank in it.
// Gone lists the ranks that left (finalised or exited) without
// entering it: the allgather fails for every rank in it.
type AllgatherDone struct {
	Job    int
	Seq    int
	Values []string
	Gone   []int
}

// RingDone: ring Seq is complete; each local rank in it gets its answer.
// Gone as for an AllgatherDone.
type RingDone struct {
	Job     int
	Seq     int
	Answers []RingEntry
	Gone    []int
}

// Exit ends the daemon with Status once its output is flushed. With
// Abandon, mpirun waits only a moment for a reader that does not read;
// Late names the nodes it gave up waiting for.
type Exit struct {
	Status  int
	Abandon bool
	Late    []string
}

func (Send) action()          {}
func (Dial) action()          {}
func (CloseLink) action()     {}
func (Spawn) action()         {}
func (StopDaemon) action()    {}
func (SpawnStep) action()     {}
func (ForwardInput) action()  {}
func (StartRanks) action()    {}
func (StageTo) action()       {}
func (SignalRanks) action()   {}
func (SetTimer) action()      {}
func (CancelTimer) action()   {}
func (Print) action()         {}
func (Warn) action()          {}
func (Waiting) action()       {}
func (Reached) action()       {}
func (ForwardStdin) action()  {}
func (StopSelf) action()      {}
func (Exit) action()          {}
func (FenceDone) action()     {}
func (RingDone) action()      {}
func (AllgatherDone) action() {}
func (ServeModex) action()    {}
func (ModexAnswered) action() {}

// Timer names a timer: its kind, and the child it is for (callback).
type Timer struct {
	Kind TimerKind
	ID   int
}

// TimerKind says what a timer is for.
type TimerKind int

const (
	CallbackTimer TimerKind = iota // a spawned child must call back before it
	GraceTimer                     // SIGTERM given; SIGKILL when it fires
	DrainTimer                     // mpirun: daemons must finish before it
	JobTimer                       // mpirun: --timeout
	StopTimer                      // mpirun: Ctrl-Z; stop even if acks are missing
	ProgressTimer                  // report who has not called back (Pending; mpirun: Waiting)
	GuardsTimer                    // a silent child's node guard must have killed it by now
	ExitWaitTimer                  // a child's link ended: its session's exit may say how
	LostWaitTimer                  // DVM: a routing neighbour's dial failed: word of its loss may come
	LookupTimer                    // mpirun: a name lookup waits no longer (ID: its serial)
	SlotWaitTimer                  // mpirun: a child job waits no longer for slots (ID: its wait's serial)
)

// Linux signal numbers the machine uses itself.
const (
	SIGHUP  = 1
	SIGINT  = 2
	SIGKILL = 9
	SIGTERM = 15
	SIGSTOP = 19
	SIGTSTP = 20
)
