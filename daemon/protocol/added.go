package protocol

import (
	"slices"

	"prsh/routed"
	"prsh/spawn"
	"prsh/topo"
)

// Daemons a running job adds: a child job (MPI_Comm_spawn's add-host)
// may name hosts the job does not have. mpirun spawns an orted on each
// as a child of its own, numbered after the job's daemons; it is a leaf
// of both trees (topo.Grown, routed.Grow), which only mpirun reaches,
// and it takes no part in phase 2: it needs no address but mpirun's,
// and no other daemon needs its. Once it calls back it gets the Welcome
// (the grown JobSpec, no subtree to spawn) and the Launch of every job
// that ran before it came (its ranks may connect to theirs), then
// whatever was held for it: the child job's Launch.

// added says this daemon is one a running job added.
func (m *Machine) added() bool { return m.self >= m.job.planned() }

// addDaemons spawns an orted on each host of hosts that has none yet,
// and returns the daemon of each host.
func (m *Machine) addDaemons(hosts []string) []int {
	ids := make([]int, len(hosts))
	for i, h := range hosts {
		ids[i] = slices.Index(m.job.Hosts, h)
		if ids[i] < m.job.planned() {
			ids[i] = m.addDaemon(h)
		}
	}
	return ids
}

// addDaemon grows the job by one daemon on host and spawns it.
func (m *Machine) addDaemon(host string) int {
	id := m.job.Daemons
	m.job.Planned = m.job.planned()
	m.job.Daemons++
	m.job.Hosts = append(slices.Clip(m.job.Hosts), host)
	m.spawnTree = topo.Grown(m.spawnTree, m.job.Daemons)
	m.routing = routed.Grow(m.routing, m.job.Daemons)
	m.router.Reroute(m.routing)
	c := &child{id: id, host: host, before: m.runningJobs()}
	m.children[id] = c
	m.emit(Spawn{spawn.Node{ID: id, Host: host}})
	return id
}

// runningJobs lists the jobs that started and have not exited, but for
// the sparse ones, which go only where their ranks are.
func (m *Machine) runningJobs() []int {
	var nums []int
	for _, j := range m.sortedJobs() {
		if j.launch != launchAwaited && !j.exited.done && !j.app.Sparse {
			nums = append(nums, j.num)
		}
	}
	return nums
}

// welcomeAdded sends an added daemon that called back the job and the
// Launch of the jobs that ran before it came; what was held for it (the
// child job's Launch) follows.
func (m *Machine) welcomeAdded(c *child, l LinkID) {
	m.emit(Send{l, Welcome{Job: m.job, Parent: m.self}})
	for _, num := range c.before {
		if j, ok := m.jobs[num]; ok {
			m.emit(Send{l, j.app})
		}
	}
}

// learnAdded learns the hosts of the daemons the job added, which a
// Launch names: a daemon that knows fewer then names their nodes right
// (its ranks' PMIx namespaces, its lines).
func (m *Machine) learnAdded(hosts []string) {
	known := len(m.job.Hosts) - m.job.planned()
	if len(hosts) > known && known >= 0 {
		m.job.Hosts = append(slices.Clip(m.job.Hosts), hosts[known:]...)
	}
}
