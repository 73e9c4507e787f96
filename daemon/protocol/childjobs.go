package protocol

import (
	"fmt"
	"maps"
	"slices"

	"prsh/modex"
)

// Child jobs (MPI_Comm_spawn, PMIx_Spawn, PMI spawn): a rank asks its
// daemon for a new job; the request travels to mpirun along the routing
// topology (ChildJobRequest), mpirun's driver places it on the job's
// daemons (PlaceChildJob, then ChildJobPlaced) and mpirun launches it as
// a job of its own number, as a DVM does its clients' jobs. Once its
// ranks all started, or it failed to, the answer travels back to the
// requesting daemon (ChildJobReply), whose driver answers the rank.
// A plain mpirun ends once every job has: the first and each child.

// ChildJobRequest asks mpirun for a child job, for daemon From's request
// ID: rank Rank of job Job asked for Req. It travels along the routing
// topology.
type ChildJobRequest struct {
	ID, From  int
	Job, Rank int
	Req       modex.SpawnRequest
}

// ChildJobReply answers daemon To's request ID: the child's job number,
// or why there is none. It travels along the routing topology.
type ChildJobReply struct {
	ID, To int
	Child  int `json:",omitempty"`
	Err    string
}

// ChildJobWanted: local rank Rank of job Job asked for a child job; ID
// names the request for the driver.
type ChildJobWanted struct {
	ID, Job, Rank int
	Req           modex.SpawnRequest
}

// ChildJobPlaced: mpirun's driver placed daemon From's request ID (a
// PlaceChildJob of rank Rank of job Job) as job Child, launched as App;
// Err says why it could not (no slot, a host not in the job), and Child
// is then 0; NoSlots, that the nodes had too few free slots. Added are
// the hosts the job gets a daemon on first (the request's add-host), in
// order: App.RankNode names the daemon of Added[i] -1-i.
type ChildJobPlaced struct {
	ID, From, Job, Rank, Child int
	App                        Launch
	Added                      []string
	Err                        string
	NoSlots                    bool
}

func (ChildJobWanted) event() {}
func (ChildJobPlaced) event() {}

// PlaceChildJob asks mpirun's driver to number and place a child job:
// Req from rank Rank of job Job (whose Launch is Parent), on the
// daemons' slots, Used[id] of which the running jobs' ranks take. The
// answer is ChildJobPlaced.
type PlaceChildJob struct {
	ID, From  int
	Job, Rank int
	Req       modex.SpawnRequest
	Parent    Launch
	// Used are the ranks of the running jobs on each daemon, Kept those
	// of the asking job alone: what stays used however long the request
	// waits for other jobs to end. One that would not fit even then is
	// refused at once (ChildJobPlaced.NoSlots false).
	Used, Kept []int
}

// ChildJobAnswered: the answer to this daemon's request ID: the child's
// job number, or the error.
type ChildJobAnswered struct {
	ID, Child int
	Err       string
}

func (PlaceChildJob) action()    {}
func (ChildJobAnswered) action() {}

// childJob is mpirun's record of a child job, from its placing to its
// end: whose it is, and who waits for the answer.
type childJob struct {
	req      ChildJobRequest
	answered bool
	exited   bool // its ranks all ended (a plain mpirun keeps it until its end)
	// client is the job a DVM client submitted that this one descends
	// from: its lines and status are that client's; ordinal numbers it
	// among that client's child jobs, from 1 (a plain mpirun's: its job
	// number), as the client's terminal and lines name it.
	client, ordinal int
}

// childJobWanted takes a local rank's request.
func (m *Machine) childJobWanted(e ChildJobWanted) {
	if _, _, ok := m.rankOf(e.Job, e.Rank); !ok || m.ending() {
		m.emit(ChildJobAnswered{ID: e.ID, Err: "the job is ending"})
		return
	}
	m.childJobRequest(ChildJobRequest{ID: e.ID, From: m.self, Job: e.Job, Rank: e.Rank, Req: e.Req})
}

// childJobRequest passes a request on toward mpirun, or takes it there.
func (m *Machine) childJobRequest(r ChildJobRequest) {
	if m.root == nil {
		m.deliver(m.router.Route(0, r))
		return
	}
	m.root.placeChildJob(r)
}

// childJobReply hands an answer to the driver, or passes it on toward
// the daemon that asked.
func (m *Machine) childJobReply(r ChildJobReply) {
	if r.To != m.self {
		m.deliver(m.router.Route(r.To, r))
		return
	}
	m.emit(ChildJobAnswered{ID: r.ID, Child: r.Child, Err: r.Err})
}

// placeChildJob asks the driver to place a request, unless the job
// cannot take one any more.
func (r *rootState) placeChildJob(req ChildJobRequest) {
	if r.place(req) {
		r.placing++
	}
}

// place asks the driver to place req, or refuses it when its job cannot
// take one any more; it says which.
func (r *rootState) place(req ChildJobRequest) bool {
	m := r.m
	parent, ok := m.jobs[req.Job]
	if !ok || m.ending() || parent.killed || parent.launch == launchAwaited || parent.exited.done {
		r.refuseChildJob(req, "the job is ending")
		return false
	}
	r.asked[placeKey{req.From, req.ID}] = req
	m.emit(PlaceChildJob{ID: req.ID, From: req.From, Job: req.Job, Rank: req.Rank, Req: req.Req,
		Parent: parent.app, Used: m.slotsUsed(func(int) bool { return true }),
		Kept: m.slotsUsed(func(job int) bool { return job == req.Job })})
	return true
}

// refuseChildJob answers a request that gets no job.
func (r *rootState) refuseChildJob(req ChildJobRequest, why string) {
	r.m.childJobReply(ChildJobReply{ID: req.ID, To: req.From, Err: why})
}

// slotsUsed counts the ranks on each daemon of the jobs still running
// that of says.
func (m *Machine) slotsUsed(of func(job int) bool) []int {
	used := make([]int, m.job.Daemons)
	for _, j := range m.sortedJobs() {
		if j.launch == launchAwaited || j.exited.done || !of(j.num) {
			continue
		}
		for _, d := range j.app.RankNode {
			if d >= 0 && d < len(used) {
				used[d]++
			}
		}
	}
	return used
}

// childJobPlaced launches a placed child job, or answers why not.
func (r *rootState) childJobPlaced(e ChildJobPlaced) {
	m := r.m
	key := placeKey{e.From, e.ID}
	asked := r.asked[key]
	delete(r.asked, key)
	again := r.replacing == key
	if again {
		r.replacing = placeKey{}
	}
	if e.NoSlots && r.mayFreeSlots(e.Job) && !m.ending() {
		r.park(asked, e.Err, again)
		return
	}
	if again {
		defer r.placeParked()
	}
	r.placing--
	req := ChildJobRequest{ID: e.ID, From: e.From, Job: e.Job, Rank: e.Rank}
	parent, ok := m.jobs[e.Job]
	switch {
	case e.Err != "":
		m.emit(Print{Line: "mpirun: " + e.Err, Job: r.lineJob(e.Job)})
		r.refuseChildJob(req, e.Err)
		r.maybeAllExited()
		return
	case !ok || m.ending() || parent.killed || parent.exited.done || m.jobs[e.Child] != nil || m.released.has(e.Child):
		r.refuseChildJob(req, "the job is ending")
		if m.jobs[e.Child] == nil {
			m.released.add(e.Child) // its number is spent: the released jobs' floor moves past it
		}
		r.maybeAllExited()
		return
	}
	c := &childJob{req: req, client: r.clientJob(req.Job), ordinal: e.Child}
	if m.job.DVM {
		r.ordinals[c.client]++
		c.ordinal = r.ordinals[c.client]
	}
	r.children[e.Child] = c
	app := e.App
	app.Job = e.Child
	app.RankNode = onAdded(app.RankNode, m.addDaemons(e.Added))
	m.jobOf(e.Child)
	r.launch(app)
}

// onAdded replaces, in a rank map, the stand-ins -1-i for the daemon of
// the i-th added host by that daemon.
func onAdded(rankNode, added []int) []int {
	out := slices.Clone(rankNode)
	for r, d := range out {
		if d < 0 && -1-d < len(added) {
			out[r] = added[-1-d]
		}
	}
	return out
}

// placeKey names a request being placed: the daemon that asked, and its
// ID there.
type placeKey struct{ from, id int }

// parkedChildJob is a request that found too few free slots while
// other jobs ran: it waits for one of them to end, up to the slot-wait
// bound, then is placed again (placeParked).
type parkedChildJob struct {
	wait int // its SlotWaitTimer's ID
	req  ChildJobRequest
	why  string // the refusal, should the wait end without slots
}

// mayFreeSlots says whether a job other than job runs, whose end may
// free slots.
func (r *rootState) mayFreeSlots(job int) bool {
	for _, j := range r.m.sortedJobs() {
		if j.num != job && j.launch != launchAwaited && !j.exited.done {
			return true
		}
	}
	return false
}

// park makes a request that found too few free slots wait: at the head
// of the line when it was the head already (again), else at its end.
func (r *rootState) park(req ChildJobRequest, why string, again bool) {
	r.lastWait++
	w := parkedChildJob{wait: r.lastWait, req: req, why: why}
	if again {
		r.parked = slices.Insert(r.parked, 0, w)
	} else {
		r.parked = append(r.parked, w)
	}
	r.m.emit(SetTimer{Timer{Kind: SlotWaitTimer, ID: w.wait}, r.m.job.Timeouts.SlotWaitMS})
}

// placeParked places the first waiting request again, once a job ended:
// one at a time, in order, each with the slots the one before took;
// the next goes once the driver placed it (childJobPlaced).
func (r *rootState) placeParked() {
	if len(r.parked) == 0 {
		return
	}
	for r.replacing == (placeKey{}) && len(r.parked) > 0 {
		w := r.parked[0]
		r.parked = r.parked[1:]
		r.m.emit(CancelTimer{Timer{Kind: SlotWaitTimer, ID: w.wait}})
		if r.place(w.req) {
			r.replacing = placeKey{w.req.From, w.req.ID}
			return
		}
		r.placing--
	}
	r.maybeAllExited()
}

// slotWaitOver refuses a request whose wait for slots ran out, as it
// would have been at once.
func (r *rootState) slotWaitOver(wait int) {
	i := slices.IndexFunc(r.parked, func(w parkedChildJob) bool { return w.wait == wait })
	if i < 0 {
		return
	}
	w := r.parked[i]
	r.parked = slices.Delete(r.parked, i, i+1)
	r.placing--
	r.m.emit(Print{Line: "mpirun: " + w.why, Job: r.lineJob(w.req.Job)})
	r.refuseChildJob(w.req, w.why)
	r.maybeAllExited()
}

// childStarted answers the request of a child job whose ranks all
// started.
func (r *rootState) childStarted(job int) {
	if c, ok := r.children[job]; ok && !c.answered {
		c.answered = true
		r.m.childJobReply(ChildJobReply{ID: c.req.ID, To: c.req.From, Child: job})
	}
}

// childFailed words a child job's failure for the user, and answers its
// request with it if its ranks had not all started.
func (r *rootState) childFailed(f Failure) Failure {
	c, ok := r.children[f.Job]
	if !ok {
		return f
	}
	by := fmt.Sprintf("rank %d", c.req.Rank)
	if p, ok := r.children[c.req.Job]; ok {
		by += fmt.Sprintf(" of child job %d", p.ordinal)
	}
	f.Msg = fmt.Sprintf("child job %d (spawned by %s): %s", c.ordinal, by, f.Msg)
	if !c.answered {
		c.answered = true
		r.m.childJobReply(ChildJobReply{ID: c.req.ID, To: c.req.From, Err: f.Msg})
	}
	return f
}

// childExited: a child job's ranks all ended. A DVM lets go of it
// everywhere, and ends its client's job once that and its other child
// jobs have ended; a plain mpirun keeps every job until its own end,
// whose teardown waits for every job's ranks to drain, and ends once
// every job has exited.
func (r *rootState) childExited(job int) {
	c, ok := r.children[job]
	if !ok {
		return
	}
	if r.m.job.DVM {
		delete(r.children, job)
		r.m.endJob(job)
		r.clientJobExited(c.client)
		return
	}
	c.exited = true
	r.maybeAllExited()
}

// maybeAllExited ends a plain mpirun once its first job and every child
// job have exited and no request is being placed.
func (r *rootState) maybeAllExited() {
	m := r.m
	if m.job.DVM || r.placing > 0 {
		return
	}
	for _, c := range r.children {
		if !c.exited {
			return
		}
	}
	if j, ok := m.jobs[0]; ok && j.exited.done && r.policy.Finish() {
		m.teardown(false)
	}
}

// clientJob is the job whose client a line of job goes to in a DVM: the
// job itself, or the client's job that it descends from.
func (r *rootState) clientJob(job int) int {
	if c, ok := r.children[job]; ok && r.m.job.DVM {
		return c.client
	}
	return job
}

// lineJob is the job a line about job goes to: its client's in a DVM,
// mpirun's stderr (0) otherwise.
func (r *rootState) lineJob(job int) int {
	if !r.m.job.DVM {
		return 0
	}
	return r.clientJob(job)
}

// family lists a DVM client's job and the child jobs that descend from
// it, in number order.
func (r *rootState) family(client int) []int {
	jobs := []int{client}
	for _, j := range r.m.sortedJobs() {
		if c, ok := r.children[j.num]; ok && c.client == client {
			jobs = append(jobs, j.num)
		}
	}
	return jobs
}

// childJobEvent takes a request's events.
func (m *Machine) childJobEvent(ev Event) {
	switch e := ev.(type) {
	case ChildJobWanted:
		m.childJobWanted(e)
	case ChildJobPlaced:
		if m.root != nil {
			m.root.childJobPlaced(e)
		}
	}
}

// Preputs are a child job's preput pairs in key order, the first values
// of its key-value space.
func Preputs(kv map[string]string) []modex.KV {
	var out []modex.KV
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		out = append(out, modex.KV{Key: k, Value: kv[k]})
	}
	return out
}
