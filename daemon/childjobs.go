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
// daemon's node (by daemon id; 0 where it runs no ranks), the hosts of
// the job's list that got no rank and so no orted (Spare: one starts
// there when a child job is placed on it), and whether a node may hold
// more ranks than slots (--oversubscribe).
type ChildJobSlots struct {
	Slots         []int
	Spare         []job.Host
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
	app, added, err := d.childLaunch(a)
	switch {
	case err != nil:
		placed.Err = fmt.Sprintf("rank %d%s asked for a child job: %v", a.Rank, d.ofChildJob(a.Job), err)
		placed.NoSlots = errors.Is(err, job.ErrNoSlots) && d.fitsOnceOthersEnd(a)
	case d.dvm != nil:
		placed.Child, placed.App = d.dvmChild(a.Job, app.RankNode), app
		if placed.Child == 0 {
			placed.Err = "the job is ending"
		}
	default:
		d.lastChild++
		placed.Child, placed.App, placed.Added = d.lastChild, app, added
	}
	d.next = append(d.next, placed)
}

// fitsOnceOthersEnd says whether a request that found too few free slots
// would fit on what its own job leaves once every other job ended: only
// then may it wait for them (a spawn of more ranks than the job could
// ever have is refused at once, not at the end of slot-wait).
func (d *Daemon) fitsOnceOthersEnd(a protocol.PlaceChildJob) bool {
	a.Used = a.Kept
	_, _, err := d.childLaunch(a)
	return err == nil
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

// childLaunch is the Launch of a child job, and the hosts it adds: each
// program's ranks placed on the free slots of the nodes its hints allow,
// in order, with the parent job's environment under the program's own.
func (d *Daemon) childLaunch(a protocol.PlaceChildJob) (protocol.Launch, []string, error) {
	spec, parent := d.machine.Job(), a.Parent
	if len(a.Req.Apps) == 0 {
		return protocol.Launch{}, nil, errors.New("it names no program")
	}
	app := protocol.Launch{
		StdinRank: protocol.StdinNone, MergeStderr: parent.MergeStderr, NoPMIx: parent.NoPMIx,
		Parent:   &protocol.ParentRank{Job: a.Job, Rank: a.Rank, Name: kvsName(spec, parent)},
		Preput:   a.Req.Preput,
		RankNode: []int{},
	}
	p := childPlacing{used: map[int]int{}}
	for id, n := range a.Used {
		p.used[id] = n
	}
	for i, sa := range a.Req.Apps {
		nodes, err := d.placeChildApp(sa, a.Req.Info, &p)
		if err != nil {
			return protocol.Launch{}, nil, err
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
	return app, p.added, nil
}

// childPlacing is what a child job's programs take as they are placed:
// the ranks on each daemon (by id; the i-th added host's is -1-i), and
// the hosts added.
type childPlacing struct {
	used  map[int]int
	added []string
}

// childNode is a node a program of a child job may run on: a daemon's,
// (id < 0) a host the request adds, or a spare host, which it adds
// only if the program gets ranks there.
type childNode struct {
	id    int
	name  string
	slots int
	spare bool
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

// placeChildApp places one program's ranks on the nodes its hints name
// (else on every node with slots), adding them to p.
func (d *Daemon) placeChildApp(sa modex.SpawnApp, jobInfo map[string]string, p *childPlacing) ([]int, error) {
	nodes, err := d.childHosts(sa, jobInfo, p)
	if err != nil {
		return nil, err
	}
	rooms := make([]job.Room, len(nodes))
	for i, n := range nodes {
		rooms[i] = job.Room{Name: n.name, Slots: n.slots, Used: p.used[n.id]}
	}
	by, err := job.ParseMapBy(hint(sa, jobInfo, "map-by"))
	if err != nil {
		return nil, err
	}
	placed, err := job.PlaceChild(rooms, sa.NP, by, d.cfg.ChildJobs.Oversubscribe)
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(placed))
	for r, i := range placed {
		if nodes[i].spare {
			nodes[i] = d.addHost(job.Host{Name: nodes[i].name, Slots: nodes[i].slots}, p)
		}
		ids[r] = nodes[i].id
		p.used[nodes[i].id]++
	}
	return ids, nil
}

// childHosts are the nodes a program may run on: those its host,
// hostfile, add-host or add-hostfile hint names, in that order, or
// every node with slots, then the spare hosts. A host and a hostfile
// name the job's nodes or spare hosts; add-host and add-hostfile may
// name others, which the job adds (p.added), with the slots they give
// them (one by default, as -H).
func (d *Daemon) childHosts(sa modex.SpawnApp, jobInfo map[string]string, p *childPlacing) ([]childNode, error) {
	named, err := namedHosts(sa, jobInfo)
	if err != nil {
		return nil, err
	}
	adds, err := addedHosts(sa, jobInfo)
	if err != nil {
		return nil, err
	}
	if len(named) == 0 && len(adds) == 0 {
		return append(d.everyChildNode(), d.spareNodes(p)...), nil
	}
	var nodes []childNode
	include := func(n childNode) {
		if !slices.ContainsFunc(nodes, func(o childNode) bool { return o.id == n.id }) {
			nodes = append(nodes, n)
		}
	}
	for _, name := range named {
		n, err := d.namedNode(name, p)
		if err != nil {
			return nil, err
		}
		include(n)
	}
	for _, h := range adds {
		n, err := d.addedNode(h, p)
		if err != nil {
			return nil, err
		}
		include(n)
	}
	return nodes, nil
}

// namedHosts are the hosts a program's host and hostfile hints name.
func namedHosts(sa modex.SpawnApp, jobInfo map[string]string) ([]string, error) {
	var named []string
	if list := hint(sa, jobInfo, "host"); list != "" {
		for _, h := range strings.Split(list, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(h), ":")
			named = append(named, name)
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
	return named, nil
}

// addedHosts are the hosts a program's add-host and add-hostfile hints
// name, with their slots.
func addedHosts(sa modex.SpawnApp, jobInfo map[string]string) ([]job.Host, error) {
	var adds []job.Host
	if list := hint(sa, jobInfo, "add-host"); list != "" {
		hosts, err := job.ParseHostList(list)
		if err != nil {
			return nil, fmt.Errorf("add-host: %w", err)
		}
		adds = hosts
	}
	if file := hint(sa, jobInfo, "add-hostfile"); file != "" {
		hosts, err := job.ReadHostfile(file)
		if err != nil {
			return nil, fmt.Errorf("add-hostfile: %w", err)
		}
		adds = append(adds, hosts...)
	}
	return adds, nil
}

// addedNode is an add-host's node: the job's own if it has it (the
// slots it had), else a host to add with the slots h gives it. A DVM
// starts no daemon for a job.
func (d *Daemon) addedNode(h job.Host, p *childPlacing) (childNode, error) {
	if id := d.daemonOfHost(h.Name); id >= 0 {
		return childNode{id: id, name: h.Name, slots: d.slotsOf(id)}, nil
	}
	if d.dvm != nil {
		return childNode{}, fmt.Errorf("host %s is not one of the DVM's nodes (a DVM starts no daemon for a job)", h.Name)
	}
	if d.agent == nil { // a one-node job whose ranks mpirun runs itself
		return childNode{}, fmt.Errorf("host %s is not one of the job's nodes, and this mpirun has no launch agent to start an orted there (it runs its one node's ranks itself; name the host in -H)", h.Name)
	}
	return d.addHost(h, p), nil
}

// addHost is the node of a host the request adds, with the slots h
// gives it.
func (d *Daemon) addHost(h job.Host, p *childPlacing) childNode {
	i := slices.Index(p.added, h.Name)
	if i < 0 {
		i = len(p.added)
		p.added = append(p.added, h.Name)
	}
	if d.addedSlots == nil {
		d.addedSlots = map[string]int{}
	}
	d.addedSlots[h.Name] = h.Slots
	return childNode{id: -1 - i, name: h.Name, slots: h.Slots}
}

// namedNode is the node of a host a host or hostfile hint names: a
// daemon's, or a spare host.
func (d *Daemon) namedNode(name string, p *childPlacing) (childNode, error) {
	if id := d.daemonOfHost(name); id >= 0 {
		return childNode{id: id, name: name, slots: d.slotsOf(id)}, nil
	}
	for _, n := range d.spareNodes(p) {
		if sameHost(n.name, name) {
			return n, nil
		}
	}
	return childNode{}, fmt.Errorf("host %s is not one of the job's nodes (add-host adds a node)", name)
}

// spareNodes are the spare hosts that have no daemon yet, in the job's
// order: one this request has added already is that added node.
func (d *Daemon) spareNodes(p *childPlacing) []childNode {
	var nodes []childNode
	for _, h := range d.cfg.ChildJobs.Spare {
		switch i := slices.Index(p.added, h.Name); {
		case d.daemonOfHost(h.Name) >= 0: // a child job added it: among the daemons
		case i >= 0:
			nodes = append(nodes, childNode{id: -1 - i, name: h.Name, slots: d.addedSlots[h.Name]})
		default:
			nodes = append(nodes, childNode{name: h.Name, slots: h.Slots, spare: true})
		}
	}
	return nodes
}

// everyChildNode lists the nodes with slots, by daemon.
func (d *Daemon) everyChildNode() []childNode {
	var nodes []childNode
	for id, h := range d.machine.Job().Hosts {
		if n := d.slotsOf(id); n > 0 {
			nodes = append(nodes, childNode{id: id, name: h, slots: n})
		}
	}
	return nodes
}

// slotsOf is the slots of daemon id's node: those the job planned, or
// the ones its add-host gave it.
func (d *Daemon) slotsOf(id int) int {
	if id < len(d.cfg.ChildJobs.Slots) {
		return d.cfg.ChildJobs.Slots[id]
	}
	if hosts := d.machine.Job().Hosts; id < len(hosts) {
		return d.addedSlots[hosts[id]]
	}
	return 0
}

// daemonOfHost is the daemon of the node name names (as the job's host
// list writes it, or without its user@), or -1.
func (d *Daemon) daemonOfHost(name string) int {
	for id, h := range d.machine.Job().Hosts {
		if sameHost(h, name) && d.slotsOf(id) > 0 {
			return id
		}
	}
	return -1
}

// sameHost says whether name names listed, a host as the job's list
// writes it: the same, or without its user@.
func sameHost(listed, name string) bool {
	_, bare, _ := strings.Cut(listed, "@")
	return listed == name || (bare != "" && bare == name)
}
