package plan

import (
	"prsh/daemon/protocol"
	"prsh/job"
)

// ownNode says whether mpirun runs the ranks of its own host itself, as
// Open MPI's mpirun does, with no orted there: when this host is one of
// the job's nodes (localFirst put it first), mpirun would fork its
// orted (no --launch-agent), and the job needs no PMIx server. mpirun is
// built without libpmix (cgo); a job that needs PMIx forks the local
// orted-pmix as before.
func ownNode(m *job.Map, spec protocol.JobSpec, self string) bool {
	return spec.LaunchAgent == "" && spec.NoPMIx && isLocal(m.Nodes[0].Name, self)
}

// runOwnNode makes mpirun, daemon 0, the daemon of the job's first node
// (this host's): the other nodes' daemons are 1 to n-1, in the same
// order and the same spawn tree, and Hosts[0] is the node's name as the
// host list gave it (the ranks' PRSH_NODE, and the messages' node).
func runOwnNode(spec *protocol.JobSpec, app *protocol.Launch) {
	spec.Daemons--
	spec.Hosts = spec.Hosts[1:]
	for r := range app.RankNode {
		app.RankNode[r]--
	}
}

// daemonOf is the daemon id of m's node index: one more than the index,
// as mpirun is daemon 0, unless mpirun is the first node's daemon.
func daemonOf(index int, own bool) int {
	if own {
		return index
	}
	return index + 1
}
