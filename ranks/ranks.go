// Package ranks starts, guards, binds and reaps the ranks of one node,
// and reports how each ended. The daemon drives it through Starter, the
// machine's rank actions (StartRanks, SignalRanks) carried out, and
// hears back Events: a rank that could not start, one that exited, one
// whose output has all been read. The daemon's PMI bridge reaches a rank
// only through what the start request hands over (Attachment): the
// socket end the rank inherits, the variables that find its server, and
// hooks on its life.
//
// The node's ranks are started by its guard (ranks/guard), one process
// per node that keeps anything they started from outliving the job; the
// job's cgroup, where there is one, holds them all.
package ranks

import (
	"os"
	"syscall"
	"time"

	"prsh/iof"
	"prsh/job/binding"
)

// Starter is what the daemon asks of its node's ranks. Its methods are
// called from one goroutine, the daemon's loop; what happens to the ranks
// later is reported on the function the Starter was made with, from other
// goroutines.
type Starter interface {
	// Start starts the node's ranks in order and returns at once, in
	// order, those that could not start: they are reported nowhere else.
	Start(req Request) []NotStarted
	// Signal signals every rank's process group, an ended rank's too:
	// what it left behind must go as well. SIGKILL also ends all that
	// the ranks started, wherever it went.
	Signal(sig syscall.Signal)
	// Live says whether a rank runs and has not begun to exit.
	Live(rank int) bool
	// Close lets go of the node's job resources when the daemon ends:
	// its guard, which kills what is left under it, and its cgroup,
	// killing what is left in it.
	Close()
}

// Event is what becomes of a rank after its start.
type Event interface{ rankEvent() }

// NotStarted is a rank that could not start: its status is the shell's
// (127: not found, 126: not executable).
type NotStarted struct {
	Rank   int
	Status int
	Err    string
}

// Exited is a rank that ended: its shell status (128+N for signal N) and
// how, in words.
type Exited struct {
	Rank   int
	Status int
	How    string
}

// Drained is a rank whose stdout and stderr have been read to their end.
type Drained struct{ Rank int }

func (NotStarted) rankEvent() {}
func (Exited) rankEvent()     {}
func (Drained) rankEvent()    {}

// Request is a node's share of the job's ranks, and how they start.
type Request struct {
	Node string // this node's name, for the ranks' PRSH_NODE and --report-bindings
	// Daemon is the process that starts the ranks as the user knows it
	// ("mpirun", "the orted on node002"), named with its limits when it reaches one.
	Daemon string
	NodeID int    // this node's number in the job, from 1, for PRSH_NODE_ID
	Size   int    // the ranks of the whole job
	Nodes  int    // the nodes of the whole job, for SLURM_NNODES
	Ranks  []Rank // this node's, in local order
	Bind   binding.Policy
	// MergeStderr sends each rank's stderr to its stdout.
	MergeStderr bool
	// Output takes what the ranks write.
	Output iof.Sink
	// Input takes the write end of the stdin of every rank whose Stdin
	// is set; the others read /dev/null.
	Input Inputs
	// GuardStopped is how long the node's guard lets this daemon stay
	// stopped before it kills it and the ranks (the job's guard-stopped
	// bound).
	GuardStopped time.Duration
	// Attach gives a rank whose program was found what the daemon hands
	// it; a rank it fails for does not start.
	Attach func(rank int) (Attachment, error)

	gtids string // SLURM_GTIDS of the node's ranks, made once for all of them
}

// Inputs holds the ranks' stdin pipes (iof.StdinTree does).
type Inputs interface {
	AddRank(rank int, pipe *os.File)
}

// Rank is one rank to start.
type Rank struct {
	ID      int
	AppNum  int  // its program's place on mpirun's command line (MPMD)
	Stdin   bool // mpirun's stdin is for it
	Program Program
}

// Program is what a rank runs.
type Program struct {
	Argv []string
	// Path is the program to run; "" looks Argv[0] up as a shell would,
	// in the PATH or from Dir when it has a slash.
	Path string
	// Dir is where it runs: the user's home when "" or when it does not
	// exist, unless DirSet (the user asked for it: then it must exist).
	Dir    string
	DirSet bool
	Env    []string // its environment, before the rank's own variables
}

// Attachment is what the daemon hands one rank: descriptors it inherits
// from 3 on (its PMI socket), variables added last to its environment,
// and hooks. Start closes Files once the rank has them.
type Attachment struct {
	Files []*os.File
	Env   []string
	// Started: the rank runs. Failed: it did not start after all.
	Started, Failed func()
	// Ended is called with the rank's exit status once it has exited,
	// before that is reported, so that whatever the rank told the daemon
	// is heard first.
	Ended func(status int)
}

func call(hook func()) {
	if hook != nil {
		hook()
	}
}
