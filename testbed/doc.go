// Package testbed emulates a cluster of ssh-reachable nodes on one machine,
// so that the launcher (mpirun spawning orted daemons over ssh along a tree)
// can be tested end to end with real processes and a real ssh protocol.
//
// Every virtual node gets its own loopback address (127.x.y.z) and an
// ephemeral port on which an ssh server written with golang.org/x/crypto/ssh
// runs commands as real processes, the way OpenSSH does for a non-pty exec
// request: `/bin/sh -c COMMAND` in a new session, stdin/stdout/stderr wired
// to the channel, exit-status or exit-signal sent when the process is gone
// and its output drained. Closing the channel or dropping the connection
// closes the process's stdin and output pipes but never kills it, exactly
// like OpenSSH, so that the runtime's lifeline logic is what gets tested.
//
// The cluster writes a hostfile, an ssh_config, a known_hosts file and a
// client key pair into its directory, so that the OpenSSH client and other
// launchers can use it too:
//
//	ssh -F DIR/ssh_config node003 hostname
//
// Every process the testbed starts carries PRSH_TESTBED_RUN=<run id> and
// PRSH_TESTBED_NODE=<node name> in its environment; Leftovers finds
// processes by these variables in /proc/PID/environ, which is how a test
// proves that the runtime cleaned up after itself.
//
// The testbed deliberately imports none of the runtime's packages: it only
// serves ssh and runs commands.
//
// # The launch agent
//
// The cluster also writes DIR/agent.conf for testbed-agent (package
// agent), a stand-in for ssh that any launcher can use as its rsh agent:
// it runs the command on the node in place, without crypto, after its
// slot of Config.SpawnCost at its spawner (one spawner's sessions take
// back-to-back slots) and Config.SSHLatency, both slept. Env names the
// file (PRSH_TESTBED_AGENT).
//
// # UTS namespaces
//
// With Config.UTS (root only), each node's processes run in their own UTS
// namespace whose hostname is the node's name. Go cannot run code between
// clone and exec, so the cluster re-executes its own binary
// (os.Executable) with a hidden first argument; MaybeRunUTSHelper handles
// that argument. It runs from this package's init function, so any binary
// that imports testbed is covered, but main functions and TestMain of test
// binaries that use UTS should still call it first thing, to make the
// dependency explicit and to keep it working should the init hook go away.
package testbed
