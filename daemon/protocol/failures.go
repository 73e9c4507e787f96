package protocol

import (
	"maps"
	"slices"
)

// What a failure does here: it goes to the role (mpirun ends the job on
// the first), and a failed child is dropped from everything that waits
// for it.

// fail reports a failure to mpirun, which ends the job on the first one.
func (m *Machine) fail(f Failure) { m.role.fail(f) }

// dropChild stops every reduction from waiting for a child that failed.
func (m *Machine) dropChild(id int) {
	m.eachReduction(func(r *reduction) { r.drop(id) })
	for _, seq := range slices.Sorted(maps.Keys(m.acks)) {
		m.acks[seq].drop(id)
		m.checkAck(seq)
	}
	for _, j := range m.sortedJobs() {
		m.collectives(j, j.coll.ChildFailed(id))
	}
}
