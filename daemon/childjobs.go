package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"prsh/daemon/protocol"
	"prsh/job"
	"prsh/modex"
)

// Child jobs (MPI_Comm_spawn and the PMI dialects' spawn): a rank's
// request goes to the machine, which takes it to mpirun; mpirun's driver
// places it here (placeChildJob) and the machine launches it as a job of
// its own number; the answer comes back to the daemon that asked.

// ChildJobSlots is what mpirun places child jobs on: the slots of each
// daemon's node (by daemon id; 0 where it runs no ranks) and whether a
// node may hold more ranks than slots (--oversubscribe).
type ChildJobSlots struct {
	Slots         []int
	Oversubscribe bool
}

// childRequests are this daemon's requests waiting for mpirun's answer.
type childRequests struct {
	last    int
	waiting map[int]func(child int, name string, err error)
}

// requestChildJob asks mpirun for a child job for rank of job (the
// requesting rank). It must be called on the daemon's loop (from an
// event handler: a PMI service posts an event whose handler calls it).
// done runs once, on the loop, with the child's job number and its
// PMI/PMIx namespace, or the error the rank's spawn call must return;
// it may run before requestChildJob returns (a job that is ending).
func (d *Daemon) requestChildJob(job, rank int, req modex.SpawnRequest, done func(child int, name string, err error)) {
	r := &d.childReqs
	if r.waiting == nil {
		r.waiting = map[int]func(int, string, error){}
	}
	r.last++
	r.waiting[r.last] = done
	d.step(protocol.ChildJobWanted{ID: r.last, Job: job, Rank: rank, Req: req})
}

// childJobAnswered hands mpirun's answer to whoever asked.
func (d *Daemon) childJobAnswered(a protocol.ChildJobAnswered) {
	done, ok := d.childReqs.waiting[a.ID]
	if !ok {
		return
	}
	delete(d.childReqs.waiting, a.ID)
	if a.Err != "" {
		done(0, "", errors.New(a.Err))
		return
	}
	done(a.Child, kvsName(d.machine.Job(), protocol.Launch{Job: a.Child}), nil)
}

// placeChildJob numbers and places a child job at mpirun; the machine
// hears the result next.
func (d *Daemon) placeChildJob(a protocol.PlaceChildJob) {
	placed := protocol.ChildJobPlaced{ID: a.ID, From: a.From, Job: a.Job, Rank: a.Rank}
	app, err := d.childLaunch(a)
	switch {
	case err != nil:
		placed.Err = fmt.Sprintf("rank %d%s asked for a child job: %v", a.Rank, d.ofChildJob(a.Job), err)
	case d.dvm != nil:
		placed.Child, placed.App = d.dvmChild(a.Job, app.RankNode), app
		if placed.Child == 0 {
			placed.Err = "the job is ending"
		}
	default:
		d.lastChild++
		placed.Child, placed.App = d.lastChild, app
	}
	d.next = append(d.next, placed)
}

// ofChildJob names a rank's job when it is a child job, by its number
// at the user's terminal (a DVM client's).
func (d *Daemon) ofChildJob(job int) string {
	if d.dvm != nil {
		of, ok := d.dvm.childClient[job]
		if !ok {
			return ""
		}
		job = of.ordinal
	}
	if job == 0 {
		return ""
	}
	return fmt.Sprintf(" of child job %d", job)
}

// childLaunch is the Launch of a child job: each program's ranks placed
// on the free slots of the nodes its hints allow, in order, with the
// parent job's environment under the program's own.
func (d *Daemon) childLaunch(a protocol.PlaceChildJob) (protocol.Launch, error) {
	spec, parent := d.machine.Job(), a.Parent
	if len(a.Req.Apps) == 0 {
		return protocol.Launch{}, errors.New("it names no program")
	}
	app := protocol.Launch{
		StdinRank: protocol.StdinNone, MergeStderr: parent.MergeStderr, NoPMIx: parent.NoPMIx,
		Parent:   &protocol.ParentRank{Job: a.Job, Rank: a.Rank, Name: kvsName(spec, parent)},
		Preput:   a.Req.Preput,
		RankNode: []int{},
	}
	used := slices.Clone(a.Used)
	for i, sa := range a.Req.Apps {
		nodes, err := d.placeChildApp(sa, a.Req.Info, used)
		if err != nil {
			return protocol.Launch{}, err
		}
		prog := childApp(sa, a.Req.Info, parent)
		prog.First = len(app.RankNode)
		app.RankNode = append(app.RankNode, nodes...)
		if i == 0 {
			app.Argv, app.Env, app.Wdir, app.WdirSet = prog.Argv, prog.Env, prog.Wdir, prog.WdirSet
		} else {
			app.More = append(app.More, prog)
		}
	}
	return app, nil
}

// childApp is one program of a child job: where it runs (its wdir hint,
// else the parent's directory) and its environment.
func childApp(sa modex.SpawnApp, jobInfo map[string]string, parent protocol.Launch) protocol.App {
	prog := protocol.App{Argv: sa.Argv, Env: slices.Concat(parent.Env, sa.Env), Wdir: parent.Wdir}
	if wdir := hint(sa, jobInfo, "wdir"); wdir != "" {
		prog.Wdir, prog.WdirSet = wdir, true
	}
	return prog
}

// hint is a program's hint by key, else the job's.
func hint(sa modex.SpawnApp, jobInfo map[string]string, key string) string {
	if v, ok := sa.Info[key]; ok {
		return v
	}
	return jobInfo[key]
}

// placeChildApp places one program's ranks on the daemons its host or
// hostfile hint names (else all of them), adding them to used.
func (d *Daemon) placeChildApp(sa modex.SpawnApp, jobInfo map[string]string, used []int) ([]int, error) {
	ids, err := d.childHosts(sa, jobInfo)
	if err != nil {
		return nil, err
	}
	slots := d.cfg.ChildJobs.Slots
	hosts := d.machine.Job().Hosts
	rooms := make([]job.Room, len(ids))
	for i, id := range ids {
		rooms[i] = job.Room{Name: hosts[id], Used: used[id]}
		if id < len(slots) {
			rooms[i].Slots = slots[id]
		}
	}
	by, err := job.ParseMapBy(hint(sa, jobInfo, "map-by"))
	if err != nil {
		return nil, err
	}
	placed, err := job.PlaceChild(rooms, sa.NP, by, d.cfg.ChildJobs.Oversubscribe)
	if err != nil {
		return nil, err
	}
	nodes := make([]int, len(placed))
	for r, i := range placed {
		nodes[r] = ids[i]
		used[ids[i]]++
	}
	return nodes, nil
}

// childHosts are the daemons a program may run on: those of the nodes
// its host, add-host or hostfile hint names, in the hint's order, or
// every daemon that runs ranks. A child job runs on the daemons already
// up: a host that is not one of them is an error.
func (d *Daemon) childHosts(sa modex.SpawnApp, jobInfo map[string]string) ([]int, error) {
	var named []string
	for _, key := range []string{"host", "add-host"} { // add-host too: no daemon starts for a child job
		if list := hint(sa, jobInfo, key); list != "" {
			for _, h := range strings.Split(list, ",") {
				name, _, _ := strings.Cut(strings.TrimSpace(h), ":")
				named = append(named, name)
			}
		}
	}
	if file := hint(sa, jobInfo, "hostfile"); file != "" {
		hosts, err := job.ReadHostfile(file)
		if err != nil {
			return nil, err
		}
		for _, h := range hosts {
			named = append(named, h.Name)
		}
	}
	if len(named) == 0 {
		return d.rankDaemons(), nil
	}
	var ids []int
	for _, name := range named {
		id := d.daemonOfHost(name)
		if id < 0 {
			return nil, fmt.Errorf("host %s is not one of the job's nodes (a child job runs on the daemons already up)", name)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// rankDaemons are the daemons whose nodes have slots.
func (d *Daemon) rankDaemons() []int {
	var ids []int
	for id, n := range d.cfg.ChildJobs.Slots {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// daemonOfHost is the daemon of the node name names (as the job's host
// list writes it, or without its user@), or -1.
func (d *Daemon) daemonOfHost(name string) int {
	for id, h := range d.machine.Job().Hosts {
		_, bare, _ := strings.Cut(h, "@")
		if h == name || (bare != "" && bare == name) {
			if id < len(d.cfg.ChildJobs.Slots) && d.cfg.ChildJobs.Slots[id] > 0 {
				return id
			}
		}
	}
	return -1
}
