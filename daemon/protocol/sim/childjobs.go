package sim

import (
	"fmt"

	"prsh/daemon/protocol"
	"prsh/modex"
)

// Child jobs in the simulator: a rank asks its daemon for one
// (ChildJobWanted), and mpirun's driver places it as the scenario says
// (PlaceChildJob, answered with ChildJobPlaced).

// ChildJobOrder is how a scenario's child job is placed and behaves.
type ChildJobOrder struct {
	NP     int
	Nodes  []int       // the daemon of each rank; none: round robin over the nodes
	Status map[int]int // each rank's exit status (absent: 0)
	MS     int64       // how long its ranks run (0: Options.RankMS)
	Refuse string      // the driver cannot place it: why
	// Added are hosts the job does not have (add-host): Nodes names the
	// daemon of Added[i] -1-i.
	Added []string
}

// WantChildJob makes rank of job, on daemon id, ask now for a child job
// as its request reqID.
func (s *Sim) WantChildJob(id, reqID, job, rank int, o ChildJobOrder) {
	s.tracef("d%d <- child job #%d for rank %d of job %d: %d ranks", id, reqID, rank, job, o.NP)
	if s.childOrders == nil {
		s.childOrders = map[int]ChildJobOrder{}
	}
	s.childOrders[reqID] = o
	req := modex.SpawnRequest{Apps: []modex.SpawnApp{{Argv: []string{"child"}, NP: o.NP}}}
	s.step(s.d[id], protocol.ChildJobWanted{ID: reqID, Job: job, Rank: rank, Req: req})
}

// placeChildJob is mpirun's driver placing a child job: numbered after
// every job so far, on the scenario's daemons.
func (s *Sim) placeChildJob(d *daemon, a protocol.PlaceChildJob) {
	o := s.childOrders[a.ID]
	if o.Refuse != "" {
		s.later(s.now+1, d.id, protocol.ChildJobPlaced{ID: a.ID, From: a.From, Job: a.Job, Rank: a.Rank, Err: o.Refuse})
		return
	}
	if s.jobs == nil {
		s.jobs = map[int]simJob{}
	}
	child := len(s.jobs) + 1
	for _, taken := s.jobs[child]; taken; _, taken = s.jobs[child] {
		child++
	}
	s.jobs[child] = simJob{status: o.Status, ms: o.MS}
	nodes := o.Nodes
	for r := 0; len(o.Nodes) == 0 && r < o.NP; r++ {
		nodes = append(nodes, 1+r%s.opt.Nodes)
	}
	app := protocol.Launch{Argv: []string{"child"}, RankNode: nodes, StdinRank: protocol.StdinNone,
		Parent: &protocol.ParentRank{Job: a.Job, Rank: a.Rank, Name: fmt.Sprintf("job%d", a.Job)}}
	s.later(s.now+1, d.id, protocol.ChildJobPlaced{ID: a.ID, From: a.From, Job: a.Job, Rank: a.Rank, Child: child, App: app, Added: o.Added})
}
