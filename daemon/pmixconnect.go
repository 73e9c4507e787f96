package daemon

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"prsh/daemon/protocol"
	"prsh/modex/pmix"
)

// Dynamic processes over the PMIx server: the name service (names.go)
// and connect, disconnect and fences between namespaces, each a fence
// over a group of several jobs (protocol/connect.go). A daemon that
// holds ranks of a connect registers the other jobs' namespaces (with no
// local rank) before the connect completes, and one that holds ranks of
// a fence over several jobs, before they enter it: the library then
// hands their job data to its clients, and holds their gets of the other
// side's data until it knows the namespace.

// pmixDynamic is one of the library's upcalls of dynamic processes:
// pmix.Publish, pmix.Lookup, pmix.Unpublish, pmix.Connect, or a
// pmix.Fence over several namespaces.
type pmixDynamic struct{ call any }

func (u pmixUpcalls) Publish(p pmix.Publish)     { u.d.post(pmixDynamic{p}) }
func (u pmixUpcalls) Lookup(l pmix.Lookup)       { u.d.post(pmixDynamic{l}) }
func (u pmixUpcalls) Unpublish(p pmix.Unpublish) { u.d.post(pmixDynamic{p}) }
func (u pmixUpcalls) Connect(c pmix.Connect)     { u.d.post(pmixDynamic{c}) }

// acrossOp is this node's part of a connect, disconnect or fence over
// several jobs, waiting for the group's fence.
type acrossOp struct {
	kind    string // "connect", "disconnect" or "fence"
	jobs    []protocol.JobRanks
	collect bool
	reply   *pmix.Reply
}

// pmixDynamicCall carries out one upcall on the loop.
func (d *Daemon) pmixDynamicCall(e pmixDynamic) {
	switch c := e.call.(type) {
	case pmix.Publish:
		d.log.Debug("PMIx publish", "proc", c.Proc, "names", c.Names, "job only", c.JobOnly)
		job, ok := d.pmixLocalJob(c.Proc.Namespace)
		if !ok {
			c.Reply.Send(nil, pmix.ErrFailed)
			return
		}
		names := make([]protocol.Name, len(c.Names))
		for i, n := range c.Names {
			names[i] = protocol.Name{Key: n.Key, Value: n.Value}
			if n.Binary {
				names[i] = protocol.Name{Key: n.Key, Bytes: []byte(n.Value)}
			}
		}
		d.publish(job, c.Proc.Rank, names, c.JobOnly, func(err error) { c.Reply.Send(nil, pmixNameError(err)) })
	case pmix.Lookup:
		d.pmixLookup(c)
	case pmix.Unpublish:
		d.log.Debug("PMIx unpublish", "proc", c.Proc, "keys", c.Keys)
		job, ok := d.pmixLocalJob(c.Proc.Namespace)
		if !ok {
			c.Reply.Send(nil, pmix.ErrFailed)
			return
		}
		d.unpublishNames(job, c.Proc.Rank, c.Keys, func(err error) { c.Reply.Send(nil, pmixNameError(err)) })
	case pmix.Connect:
		op := acrossOp{kind: "connect", reply: c.Reply}
		if c.Disconnect {
			op.kind = "disconnect"
		}
		d.pmixAcross(op, c.Procs, nil, c.Timeout)
	case pmix.Fence:
		d.pmixAcross(acrossOp{kind: "fence", collect: c.Collect, reply: c.Reply}, c.Procs, c.Data, c.Timeout)
	}
}

func (d *Daemon) pmixLookup(c pmix.Lookup) {
	d.log.Debug("PMIx lookup", "proc", c.Proc, "keys", c.Keys, "wait", c.Wait, "timeout", c.Timeout)
	job, ok := d.pmixLocalJob(c.Proc.Namespace)
	if !ok {
		c.Reply.Send(nil, pmix.ErrFailed)
		return
	}
	d.lookup(job, c.Proc.Rank, c.Keys, c.Wait, c.Timeout.Milliseconds(), func(found []protocol.Name, err error) {
		names := make([]pmix.Name, len(found))
		for i, n := range found {
			names[i] = pmix.Name{Key: n.Key, Value: n.Value, Owner: pmix.Proc{Namespace: d.namespaceOf(n.Job), Rank: n.Rank}}
			if n.Bytes != nil {
				names[i].Value, names[i].Binary = string(n.Bytes), true
			}
		}
		c.Reply.Send(names, pmixNameError(err))
	})
}

// pmixNameError is the status a name request's error gives the ranks.
func pmixNameError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNameNotFound):
		return pmix.ErrNotFound
	case errors.Is(err, errNameDuplicate):
		return pmix.ErrDuplicate
	case errors.Is(err, errNameTimedOut):
		return pmix.ErrTimeout
	}
	return pmix.ErrFailed
}

// pmixLocalJob is the job of a namespace registered here for its ranks.
func (d *Daemon) pmixLocalJob(ns string) (int, bool) {
	if j := d.pmixJobOf(ns); j != nil {
		return j.job, true
	}
	return 0, false
}

// namespaceOf is job's PMIx namespace (and PMI key-value space).
func (d *Daemon) namespaceOf(job int) string {
	return kvsName(d.machine.Job(), protocol.Launch{Job: job})
}

// jobOfNamespace is the job whose namespace ns is, if it was launched.
func (d *Daemon) jobOfNamespace(ns string) (int, protocol.Launch, bool) {
	id := d.machine.Job().ID
	job := 0
	if ns != id {
		num, ok := strings.CutPrefix(ns, id+"_")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n <= 0 {
			return 0, protocol.Launch{}, false
		}
		job = n
	}
	app, ok := d.machine.JobLaunch(job)
	return job, app, ok
}

// acrossOf is the jobs and ranks that procs list, by job number, each
// rank once; a wildcard stands for all of its job's ranks.
func (d *Daemon) acrossOf(procs []pmix.Proc) ([]protocol.JobRanks, error) {
	ranks := map[int][]int{}
	for _, p := range procs {
		job, app, ok := d.jobOfNamespace(p.Namespace)
		if !ok {
			return nil, fmt.Errorf("no job has the namespace %q", p.Namespace)
		}
		if p.Rank == pmix.Wildcard {
			for r := range app.RankNode {
				ranks[job] = append(ranks[job], r)
			}
		} else if p.Rank < 0 || p.Rank >= len(app.RankNode) {
			return nil, fmt.Errorf("namespace %q has no rank %d", p.Namespace, p.Rank)
		} else {
			ranks[job] = append(ranks[job], p.Rank)
		}
	}
	var out []protocol.JobRanks
	for _, job := range slices.Sorted(maps.Keys(ranks)) {
		rs := ranks[job]
		slices.Sort(rs)
		out = append(out, protocol.JobRanks{Job: job, Ranks: slices.Compact(rs)})
	}
	return out, nil
}

// pmixAcross: every local rank listed entered a connect, disconnect or
// fence over procs. One job's is a fence over its group (pmix.go); that
// of several jobs, a fence over their group that the local members
// still running enter, carrying no data (pmixAcrossDone). A fence's
// node registers the namespaces it lacks first, as a connect does at
// its end (registerOthers): the library holds a get of an unknown
// namespace's data for ever. The registration is complete when
// RegisterJob returns, so no job can end in between here.
func (d *Daemon) pmixAcross(op acrossOp, procs []pmix.Proc, data []byte, timeout time.Duration) {
	d.log.Debug("PMIx across jobs", "op", op.kind, "procs", procs)
	jobs, err := d.acrossOf(procs)
	if err != nil {
		d.log.Warn("PMIx: a "+op.kind+" over processes of no job here", "error", err)
		op.reply.Send(nil, pmix.ErrFailed)
		return
	}
	if len(jobs) == 1 {
		f := pmix.Fence{Namespace: d.namespaceOf(jobs[0].Job), Ranks: jobs[0].Ranks, Data: data, Collect: op.collect,
			Timeout: timeout, Reply: op.reply}
		d.pmixFenceEntered(f)
		return
	}
	var in []protocol.FenceEntered
	for _, jr := range jobs {
		local := d.jobs[jr.Job]
		for _, r := range jr.Ranks {
			if local != nil && local.ranks[r] != nil && local.starter.Live(r) {
				in = append(in, protocol.FenceEntered{Job: jr.Job, Rank: r, Across: jobs})
			}
		}
	}
	if len(in) == 0 { // its ranks here are exiting: it cannot complete
		op.reply.Send(nil, pmix.ErrFailed)
		return
	}
	if op.kind == "fence" {
		if err := d.registerOthers(jobs); err != nil {
			op.reply.Send(nil, err)
			return
		}
	}
	d.armTimeout(op.reply, timeout)
	op.jobs = jobs
	name := protocol.AcrossName(jobs)
	d.pmix.across[name] = append(d.pmix.across[name], op) // first: it may complete in a step
	for _, e := range in {
		d.step(e)
	}
}

// pmixAcrossDone completes the node's oldest operation over a group of
// several jobs: a connect registers the other jobs' namespaces first.
// A fence hands the library no data, even when the ranks asked it to
// collect some: their gets of any rank's data go by direct modex.
// PMIx 4.2.2's library packs a node's part of such a fence by the
// position of each process in a list that differs between nodes (their
// namespaces' order), so that the parts of all nodes, put together,
// gave a rank another rank's value (job b's rank read job a's rank 0's
// for rank 2, in e2e TestDVMFenceAcrossJobs).
func (d *Daemon) pmixAcrossDone(done protocol.FenceDone) {
	if d.pmix == nil || len(d.pmix.across[done.Group]) == 0 {
		return
	}
	ops := d.pmix.across[done.Group]
	op := ops[0]
	if len(ops) == 1 {
		delete(d.pmix.across, done.Group)
	} else {
		d.pmix.across[done.Group] = ops[1:]
	}
	if len(done.Gone) > 0 {
		d.log.Warn("PMIx: a "+op.kind+" between jobs failed: processes of it ended before entering it", "group", done.Group)
		d.pmixReply(op.reply, nil, pmix.ErrFailed)
		return
	}
	var err error
	if op.kind == "connect" {
		err = d.registerOthers(op.jobs)
	}
	d.pmixReply(op.reply, nil, err)
}

// otherJob is a job's namespace registered here for the local jobs
// connected to it or in a fence with it (by), where it has no rank. It
// stays until they have all ended, its own end or not: a rank's get of
// its data then fails (the job is gone) where, the namespace unknown to
// the library, the library would hold the get for ever.
type otherJob struct {
	ns    string
	by    map[int]bool
	ended bool
}

// registerOthers registers, with no local rank, the namespaces of the
// jobs that have no rank here (where their ranks are, and their sizes),
// for the local jobs among jobs. A job whose ranks here have yet to
// start is left to startPMIx: a fence with them cannot end before.
// It fails where a job has ended here.
func (d *Daemon) registerOthers(jobs []protocol.JobRanks) error {
	for _, jr := range jobs {
		if o := d.pmix.others[jr.Job]; o != nil {
			d.connectedBy(o, jobs)
			continue
		}
		if d.pmix.jobs[jr.Job] != nil {
			continue
		}
		app, ok := d.machine.JobLaunch(jr.Job)
		if !ok {
			return pmix.ErrFailed
		}
		if slices.Contains(app.RankNode, d.cfg.ID) {
			continue
		}
		ns := d.namespaceOf(jr.Job)
		err := d.pmix.server.RegisterJob(pmix.Job{Namespace: ns, Hosts: d.machine.Job().Hosts, RankNode: app.RankNode,
			Node: d.cfg.ID, AppFirst: appFirsts(app)})
		if err != nil {
			d.log.Warn("PMIx: another job's namespace", "namespace", ns, "error", err)
			return pmix.ErrFailed
		}
		o := &otherJob{ns: ns, by: map[int]bool{}}
		d.pmix.others[jr.Job] = o
		d.connectedBy(o, jobs)
	}
	return nil
}

// connectedBy notes the local jobs among jobs as connected to o, or in
// a fence with it.
func (d *Daemon) connectedBy(o *otherJob, jobs []protocol.JobRanks) {
	for _, jr := range jobs {
		if d.pmix.jobs[jr.Job] != nil {
			o.by[jr.Job] = true
		}
	}
}

// releaseAcross lets go of what job left here besides its own
// namespace: its name requests in flight, the operations over groups
// that it is in (which can complete no more), the local requests for
// its ranks' data, and the namespaces registered for it alone.
func (d *Daemon) releaseAcross(job int) {
	d.releaseNames(job)
	if d.pmix == nil {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(d.pmix.asked)) {
		if a := d.pmix.asked[id]; a.job == job {
			delete(d.pmix.asked, id)
			a.reply.Send(nil, pmix.ErrFailed)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.pmix.across)) {
		ops := d.pmix.across[name]
		if !slices.ContainsFunc(ops[0].jobs, func(jr protocol.JobRanks) bool { return jr.Job == job }) {
			continue
		}
		delete(d.pmix.across, name)
		for _, op := range ops {
			d.pmixReply(op.reply, nil, pmix.ErrFailed)
		}
	}
	if o := d.pmix.others[job]; o != nil {
		o.ended = true
	}
	for _, other := range slices.Sorted(maps.Keys(d.pmix.others)) {
		o := d.pmix.others[other]
		delete(o.by, job)
		if o.ended && len(o.by) == 0 {
			delete(d.pmix.others, other)
			if err := d.pmix.server.DeregisterJob(o.ns); err != nil {
				d.log.Warn("PMIx: another job's namespace", "namespace", o.ns, "error", err)
			}
		}
	}
}

// pmixPeerJob is the job of namespace ns whose data a local rank may
// ask for: its own, or one it connected to.
func (d *Daemon) pmixPeerJob(ns string) (int, bool) {
	if job, ok := d.pmixLocalJob(ns); ok {
		return job, true
	}
	for job, other := range d.pmix.others {
		if other.ns == ns {
			return job, true
		}
	}
	return 0, false
}
