// Package agent starts orted daemons on nodes: the launch agents (Open
// MPI's name, and mpirun's --launch-agent) that mpirun, and each orted
// further down the δ-ary spawn tree, uses to put a daemon on its
// children. "Launch" in prsh means phase 3, the application's start; what
// an agent does is spawning.
//
// These implement Agent:
//
//   - SSH, the default: a native ssh client (golang.org/x/crypto/ssh) that
//     reads the OpenSSH client configuration and known_hosts files.
//   - Command: an external launcher from a template such as "rsh %h" or
//     "srun -N1 -n1 -w %h", for sites where native ssh does not fit.
//   - Srun: inside a Slurm allocation, each orted a job step of its own,
//     started by its parent in the spawn tree.
//   - SrunStep: inside a Slurm allocation, the orteds of all nodes as one
//     job step (a Group: one call starts many hosts).
//   - Fork: plain fork/exec, for when the only node is this one.
//   - Split: Fork for this host's node, another agent for the rest.
//
// All of them give the daemon the same standard input discipline: the
// payload (the job's secret) is written first, then the input stays open as the daemon's
// lifeline until Process.Close.
package agent

import (
	"context"
	"fmt"
)

// Agent starts one orted on a node.
//
// Implementations are safe for concurrent use: a parent spawns all of its
// children at once.
type Agent interface {
	// Start runs argv on host and returns once the remote command has been
	// started (or failed to start).
	//
	// stdin is written to the command's standard input first; the input then
	// stays open: the daemon treats EOF on its stdin as "my parent is gone"
	// (its lifeline), so the Process keeps it open until Close.
	//
	// ctx bounds the start only (connecting, authenticating, starting the
	// command and writing stdin); cancelling it later does not touch a
	// started command.
	//
	// Errors name the cause without the host (the caller prefixes the node
	// name), e.g.
	//
	//	ssh: dial tcp 127.1.0.5:22: connect: connection refused
	//	ssh: handshake timed out after 5s
	//	ssh: host key mismatch for node005 (127.1.0.5:2222): got SHA256:…, known_hosts has SHA256:…
	//	ssh: host node005 not in known_hosts (StrictHostKeyChecking yes): SHA256:…
	//	ssh: authentication failed for root@…
	//	lookup nosuchhost: no such host
	Start(ctx context.Context, host string, argv []string, stdin []byte) (Process, error)
}

// Process is one started command.
type Process interface {
	// Wait blocks until the remote command ends; nil for exit 0, else an
	// *ExitError with the exit status (or signal) and the last few KiB of the
	// command's stderr (trimmed), so that "orted: not found" (status 127)
	// reaches the user. Other errors (such as a lost connection) are
	// returned as they are. Every call returns the same result.
	Wait() error

	// Alive is closed once the command has written to its stdout: a sign
	// of life that orted gives as it starts, before it calls back, so that
	// its parent can tell a slow daemon from one that never started.
	Alive() <-chan struct{}

	// Close closes stdin (the daemon's lifeline) and releases the
	// session/connection. It gives the command a short grace period to end
	// on its own (so Wait can still report its exit status), then ends it:
	// local processes are killed, ssh connections are closed. When Close
	// returns, Wait does not block. Safe to call twice and concurrently with
	// Wait.
	Close() error

	// Kill is Close for a command that cannot end by itself (a daemon
	// stopped, or stuck in the kernel): it kills the command first where
	// the agent can reach it. The ssh agent sends the session the signal
	// KILL (RFC 4254, 6.9), which OpenSSH's sshd (9.2 here) delivers to
	// the session's process group, but refuses in a root session; a
	// server that ignores it leaves the command running. The local agents
	// kill their process, which for an external launcher (Command) is the
	// launcher, not the remote command. The first of Close and Kill
	// decides.
	Kill() error
}

// Cancellable is a Process of a Slurm job step (SrunStep): once Wait
// returned, Cancelled says whether Slurm cancelled the step (scancel, the
// job's time limit), which sends every task SIGTERM: an orted that ended
// with 0 all the same ended because of it.
type Cancellable interface {
	Cancelled() bool
}

// ExitError reports a command that ended unsuccessfully.
type ExitError struct {
	// Status is the exit status; 128+n for signal n (as a shell reports it),
	// -1 when the remote side sent neither status nor signal.
	Status int
	// Signal is the name of the signal that ended the command, without the
	// SIG prefix ("KILL"), or "".
	Signal string
	// Stderr is the tail of the command's standard error, trimmed.
	Stderr string
}

// Error renders "exit status 127: sh: 1: /x/orted: not found".
func (e *ExitError) Error() string {
	var s string
	switch {
	case e.Signal != "":
		s = "signal " + e.Signal
	case e.Status < 0:
		s = "exited without exit status"
	default:
		s = fmt.Sprintf("exit status %d", e.Status)
	}
	if e.Stderr != "" {
		s += ": " + e.Stderr
	}
	return s
}
