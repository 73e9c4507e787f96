package protocol

import (
	"fmt"
	"slices"
)

// The lifecycles of this daemon's job and of each child daemon, as named
// states and the moves each may make (in the manner of etcd raft's
// tracker states and flux-core's broker state machine). A move the table
// does not allow is a bug in the machine: it is refused, the state stays,
// and a Warn says which move it was. A Warn rather than a panic: the
// machine runs inside every daemon of a live job, and one bad move in the
// bookkeeping must not take the job's ranks down with it; the driver logs
// the Warn, and the tests look for it.
//
// Each lifecycle is one dimension that only moves forward. Where two
// things happen in either order (a child's session process and its
// link; the Launch and the staged files), they are kept apart, not
// spelt out as every combination.

// state is a lifecycle's state: a small integer with a name.
type state interface {
	~int
	fmt.Stringer
}

// moves lists, for each state, the states it may move to.
type moves[S state] [][]S

func (t moves[S]) allow(from, to S) bool {
	return int(from) >= 0 && int(from) < len(t) && slices.Contains(t[from], to)
}

// move sets *at to to if the table allows it; otherwise it warns, names
// what moved (what), and leaves *at as it is.
func move[S state](m *Machine, what string, t moves[S], at *S, to S) bool {
	if !t.allow(*at, to) {
		m.warn("%s: illegal move from %v to %v", what, *at, to)
		return false
	}
	*at = to
	return true
}

func name(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("state(%d)", i)
}

// launchState is how far this daemon is in starting its ranks. The
// staged files are not part of it: they may come before the Launch or
// after it (Machine.staged).
type launchState int

const (
	launchAwaited launchState = iota
	launchHeld                // the Launch is here; the ranks wait for the staged files
	ranksStarted              // the ranks were started
)

var launchMoves = moves[launchState]{
	launchAwaited: {launchHeld},
	launchHeld:    {ranksStarted},
	ranksStarted:  {},
}

var launchNames = []string{"awaiting the launch", "launch held", "ranks started"}

func (s launchState) String() string { return name(launchNames, int(s)) }

// endState is whether the job goes on, ends, or is over here.
type endState int

const (
	jobRunning  endState = iota
	jobEnding            // the teardown began: nothing new starts; everything drains
	jobFinished          // Exit went out: the machine takes no more events
)

var endMoves = moves[endState]{
	jobRunning:  {jobEnding},
	jobEnding:   {jobFinished},
	jobFinished: {},
}

var endNames = []string{"running", "ending", "finished"}

func (s endState) String() string { return name(endNames, int(s)) }

// sessionState is the life of the launch agent's process that runs a
// child's orted (its session): a session that could not start ends
// without running.
type sessionState int

const (
	sessionSpawning sessionState = iota // Spawn went out
	sessionRunning                      // the process runs
	sessionEnded                        // it ended, or never started
)

var sessionMoves = moves[sessionState]{
	sessionSpawning: {sessionRunning, sessionEnded},
	sessionRunning:  {sessionEnded},
	sessionEnded:    {},
}

var sessionNames = []string{"spawning", "running", "ended"}

func (s sessionState) String() string { return name(sessionNames, int(s)) }

// callState is a child orted's call back and the link it opened.
type callState int

const (
	callAwaited  callState = iota // no sign of it yet
	callAlive                     // it gave its sign of life: its call back should follow
	callLinked                    // it called back: its link is up
	callLinkLost                  // the link ended
	callSilent                    // the link ended because it stopped answering
)

var callMoves = moves[callState]{
	callAwaited:  {callAlive, callLinked},
	callAlive:    {callLinked},
	callLinked:   {callLinkLost, callSilent},
	callLinkLost: {},
	callSilent:   {},
}

var callNames = []string{"awaited", "alive", "linked", "link lost", "silent"}

func (s callState) String() string { return name(callNames, int(s)) }

func (m *Machine) moveSession(c *child, to sessionState) bool {
	return move(m, fmt.Sprintf("the session of daemon %d", c.id), sessionMoves, &c.session, to)
}

func (m *Machine) moveCall(c *child, to callState) bool {
	return move(m, fmt.Sprintf("the call back of daemon %d", c.id), callMoves, &c.call, to)
}

func (m *Machine) moveEnd(to endState) bool { return move(m, "the job", endMoves, &m.end, to) }
