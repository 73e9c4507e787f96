package daemon

import (
	"encoding/json"
	"fmt"

	"prsh/routed"
	"prsh/spawn"
)

// Control messages travel as JSON payloads of transport frames; the frame's
// kind byte says which type the payload is. Launch data is small next to
// what the ranks exchange later, and JSON keeps the wire readable.
const (
	kindHello     byte = 1 + iota // a dialer introduces itself
	kindWelcome                   // spawn parent → child: the job and the child's subtree
	kindAddrs                     // phase 2: contact addresses
	kindLaunch                    // phase 3: start the ranks
	kindFailure                   // something broke: travels up the spawn tree to mpirun
	kindMilestone                 // a subtree reached a milestone: travels up the spawn tree
	kindTeardown                  // end the job: travels down the spawn tree
	kindSignal                    // deliver a signal to every rank: travels down the spawn tree
	kindSignalAck                 // a subtree delivered a signal: travels up the spawn tree
	kindSkipped                   // a node was left out: travels up the spawn tree
)

// Hello is the first message on a connection: who is calling.
type Hello struct {
	ID   int
	Addr string
}

// Welcome hands a newly connected child the job and its subtree.
type Welcome struct {
	Job    JobSpec
	Nodes  []spawn.Node // the child's descendants, which it spawns in turn
	Parent int          // the id of the daemon sending it
}

// JobSpec is what every daemon needs to know about the job's daemons.
type JobSpec struct {
	Daemons      int    // n + 1: mpirun and one orted per node
	SpawnDegree  int    // δ; 0 = the routing topology's tree
	Routed       string // routing topology name
	RoutedRadix  int
	OrtedPath    string
	LogLevel     string
	SSHTimeoutMS int64 // connect timeout of the native ssh agent
	CallbackMS   int64 // how long a spawned daemon may take to call back
	KillGraceMS  int64 // between SIGTERM and SIGKILL when the job is stopped
	MaxSessions  int
	LaunchAgent  string // external launch command template; "" = native ssh
	SSHConfig    string
	Hosts        []string // node name of each daemon id, [0] = mpirun's
	// SkipUnreachable leaves out nodes that cannot be spawned and adopts
	// their subtrees, instead of aborting (--on-unreachable skip).
	SkipUnreachable bool
}

// Addrs carries contact addresses for phase 2.
type Addrs struct {
	Entries []routed.Entry
}

// Launch is the application launch, broadcast over the routing topology.
type Launch struct {
	Argv     []string
	Env      []string // set on top of each daemon's environment
	Wdir     string   // "" = the daemon's home directory
	WdirSet  bool     // the user asked for Wdir: a missing one is an error
	RankNode []int    // daemon id of each rank
	// StdinRank is the rank that gets mpirun's stdin, StdinAll or
	// StdinNone.
	StdinRank   int
	MergeStderr bool // the ranks' stderr goes to their stdout pipe
}

// Stdin targets besides a rank number.
const (
	StdinNone = -1
	StdinAll  = -2
)

// Failure reports something that ends the job, worded for the user.
type Failure struct {
	Msg    string // one line, naming the node and rank
	Status int    // the exit status mpirun should take
}

// Milestone kinds, reported by a subtree once reached everywhere in it.
const (
	Spawned   = iota // every daemon connected (phase 1)
	Addressed        // every daemon knows every address (phase 2)
	Started          // every rank started
	Exited           // every rank exited
	numMilestones
)

var milestoneNames = [numMilestones]string{"phase 1 (daemons spawned)", "phase 2 (addresses exchanged)", "ranks started", "ranks exited"}

// Milestone says the sender's whole subtree reached Kind.
type Milestone struct{ Kind int }

// Skipped tells mpirun a node was left out, and why.
type Skipped struct {
	ID  int
	Msg string
}

// Teardown ends the job: kill the ranks, flush, exit.
type Teardown struct{ Kill bool }

// Signal asks every daemon to deliver Sig to its ranks. With Ack, each
// subtree answers with a SignalAck once the signal is delivered in it.
type Signal struct {
	Sig int
	Ack bool
}

// SignalAck says a Signal with Ack was delivered in the sender's subtree.
type SignalAck struct{}

func encode(msg any) (byte, []byte, error) {
	kind, ok := kindOf(msg)
	if !ok {
		return 0, nil, fmt.Errorf("no wire kind for %T", msg)
	}
	b, err := json.Marshal(msg)
	return kind, b, err
}

func kindOf(msg any) (byte, bool) {
	switch msg.(type) {
	case Hello:
		return kindHello, true
	case Welcome:
		return kindWelcome, true
	case Addrs:
		return kindAddrs, true
	case Launch:
		return kindLaunch, true
	case Failure:
		return kindFailure, true
	case Milestone:
		return kindMilestone, true
	case Teardown:
		return kindTeardown, true
	case Signal:
		return kindSignal, true
	case SignalAck:
		return kindSignalAck, true
	case Skipped:
		return kindSkipped, true
	}
	return 0, false
}

func decode(kind byte, payload []byte) (any, error) {
	var msg any
	var err error
	switch kind {
	case kindHello:
		msg, err = decodeAs[Hello](payload)
	case kindWelcome:
		msg, err = decodeAs[Welcome](payload)
	case kindAddrs:
		msg, err = decodeAs[Addrs](payload)
	case kindLaunch:
		msg, err = decodeAs[Launch](payload)
	case kindFailure:
		msg, err = decodeAs[Failure](payload)
	case kindMilestone:
		msg, err = decodeAs[Milestone](payload)
	case kindTeardown:
		msg, err = decodeAs[Teardown](payload)
	case kindSignal:
		msg, err = decodeAs[Signal](payload)
	case kindSignalAck:
		msg, err = decodeAs[SignalAck](payload)
	case kindSkipped:
		msg, err = decodeAs[Skipped](payload)
	default:
		return nil, fmt.Errorf("unknown message kind %d", kind)
	}
	return msg, err
}

func decodeAs[T any](payload []byte) (T, error) {
	var v T
	err := json.Unmarshal(payload, &v)
	return v, err
}
