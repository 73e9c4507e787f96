package daemon

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"prsh/daemon/protocol"
	"prsh/modex"
	"prsh/modex/pmix"
	"prsh/ranks/guard"
)

// The PMIx server of this daemon's ranks: the reference library runs it
// (modex/pmix); this file feeds its upcalls to the event loop and its
// fences to the machine's fence, whose puts carry each node's data.

// pmixHost is the library's server and its jobs: a plain mpirun's one
// (number 0), a DVM's one after another, each in a namespace of its own.
type pmixHost struct {
	server *pmix.Server
	tmpdir string
	jobs   map[int]*pmixJob
	// asked holds the library's direct-modex requests in flight, by ID.
	asked  map[int]pmixAsked
	lastID int
	// across holds this node's operations over groups of several jobs
	// in progress, by group (protocol.AcrossName), oldest first; others,
	// the namespaces of jobs connected to local ranks, registered here
	// with no local rank, by job (pmixconnect.go).
	across map[string][]acrossOp
	others map[int]*otherJob
	// timeouts holds the timers of the fences, connects and disconnects
	// not yet answered that have a timeout (pmixtimeout.go).
	timeouts map[*pmix.Reply]Timer
}

// pmixJob is one job's namespace and the fences waiting on the machine.
type pmixJob struct {
	job    int
	ns     string
	tmpdir string       // the scratch directory of its ranks
	fences []pmix.Fence // this node's part of the fence in progress
	// groupFences are this node's parts of the fences over groups of
	// ranks in progress, by group (protocol.GroupName), oldest first.
	groupFences map[string][]pmix.Fence
	nodes       []int // the daemons that hold ranks, whose data a fence merges
	// storeEnv is added to every rank's environment after the library's
	// own variables (hashStoreEnv).
	storeEnv []string
}

// pmixAsked is a direct-modex request of a job's rank.
type pmixAsked struct {
	job   int
	reply *pmix.Reply
}

// Driver events of the library's upcalls: each names its job's
// namespace, and one of a job already let go of is dropped.
type (
	pmixUpcall struct {
		ns string
		ev func(job int) protocol.Event
	}
	pmixFence       struct{ fence pmix.Fence }
	pmixDirectModex struct {
		proc  pmix.Proc
		reply *pmix.Reply
	}
)

// pmixUpcalls posts the library's upcalls to the loop.
type pmixUpcalls struct{ d *Daemon }

func (u pmixUpcalls) Connected(p pmix.Proc) {
	u.d.post(pmixUpcall{p.Namespace, func(job int) protocol.Event { return protocol.PMIConnected{Job: job, Rank: p.Rank} }})
}

func (u pmixUpcalls) Finalized(p pmix.Proc) {
	u.d.post(pmixUpcall{p.Namespace, func(job int) protocol.Event { return protocol.PMIFinalize{Job: job, Rank: p.Rank} }})
}

func (u pmixUpcalls) Fence(f pmix.Fence) {
	if f.Procs != nil { // over several namespaces
		u.d.post(pmixDynamic{f})
		return
	}
	u.d.post(pmixFence{f})
}

// Aborted: Open MPI 4 says "N/A" when MPI_Abort gave no message.
func (u pmixUpcalls) Aborted(p pmix.Proc, status int, msg string) {
	if msg == "N/A" {
		msg = ""
	}
	u.d.post(pmixUpcall{p.Namespace, func(job int) protocol.Event {
		return protocol.Aborted{Job: job, Rank: p.Rank, Status: status, Msg: msg}
	}})
}

func (u pmixUpcalls) DirectModex(p pmix.Proc, r *pmix.Reply) { u.d.post(pmixDirectModex{p, r}) }

// pmixJobOf is the job whose namespace is ns, or nil once it was let go
// of (or before the server is up).
func (d *Daemon) pmixJobOf(ns string) *pmixJob {
	if d.pmix == nil {
		return nil
	}
	for _, j := range d.pmix.jobs {
		if j.ns == ns {
			return j
		}
	}
	return nil
}

// pmixEvent gives the machine what a rank told the library, unless its
// job is gone.
func (d *Daemon) pmixEvent(e pmixUpcall) {
	if j := d.pmixJobOf(e.ns); j != nil {
		d.step(e.ev(j.job))
	}
}

// pmixJobNum is job's namespace here, or nil where it has none.
func (d *Daemon) pmixJobNum(job int) *pmixJob {
	if d.pmix == nil {
		return nil
	}
	return d.pmix.jobs[job]
}

// pmixBoot is the library's server once initialised, or why it is not.
type pmixBoot struct {
	server *pmix.Server
	tmpdir string
	err    error
}

// bootPMIx initialises the library, unless the job needs no server,
// while the orted spawns and exchanges addresses: its start-up (≈150 ms
// here) then costs the launch nothing where the orted would otherwise
// wait on the network.
func (d *Daemon) bootPMIx(job protocol.JobSpec) {
	if d.isRoot() {
		return
	}
	if job.NoPMIx {
		d.pmixWhy = errNotBooted
		if job.DVM {
			d.pmixWhy = errDVMNotBooted
		}
		d.log.Debug("no PMIx server: mpirun found that no program of the job may use it")
		return
	}
	if !pmix.Available {
		d.pmixWhy = pmix.ErrUnavailable
		return
	}
	boot := make(chan pmixBoot, 1)
	d.pmixBoot = boot
	go func() {
		dir, err := guard.ScratchDir("prsh-pmix-", "the PMIx server's directory") // a killed orted's is removed by the next
		if err != nil {
			boot <- pmixBoot{err: err}
			return
		}
		var s *pmix.Server
		segs := pmixSegments(job)
		if err = reserveStore(dir, job.DVM, segs); err == nil {
			s, err = startPMIxServer(dir, d.cfg.Node, job.DVM, segs, pmixUpcalls{d})
		}
		if err != nil {
			os.RemoveAll(dir)
		}
		boot <- pmixBoot{s, dir, err}
	}()
}

// pmixSegments are the store's segment sizes the job names, or the
// default's.
func pmixSegments(job protocol.JobSpec) pmix.Segments {
	segs := pmix.DefaultSegments
	if job.PMIxMetaSegment > 0 {
		segs.Meta = job.PMIxMetaSegment
	}
	if job.PMIxDataSegment > 0 {
		segs.Data = job.PMIxDataSegment
	}
	return segs
}

// reserveStore makes sure the library's shared-memory store fits in its
// directory (a DVM's server keeps none). Where it does not, PMIx 4.2
// fails each client's start with lines of its own, and its server thread
// can deadlock on a store's lock, which a client that died left held; a
// node that says so at once is the user's one line instead.
func reserveStore(dir string, manyJobs bool, segs pmix.Segments) error {
	if manyJobs {
		return nil
	}
	f, err := os.CreateTemp(dir, ".reserve-")
	if err == nil {
		defer os.Remove(f.Name())
		defer f.Close()
		err = unix.Fallocate(int(f.Fd()), 0, 0, segs.Bytes())
	}
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil // the file system cannot say ahead
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err != nil {
		return fmt.Errorf("no room for its shared-memory store (%d KiB) in %s: %w", segs.Bytes()>>10, os.TempDir(), err)
	}
	return nil
}

// startPMIxServer starts the library's server with the node's topology
// from the cache when it is there (topocache.go), and fills the cache
// when it is not. The parameter is unset again before anything else is
// started, so that no rank and no orted inherits it; an orted spawned in
// between drops it itself (dropInheritedTopology).
func startPMIxServer(dir, node string, manyJobs bool, segs pmix.Segments, h pmix.Handler) (*pmix.Server, error) {
	cache := ""
	if !dropInheritedTopology() {
		cache = topologyCache()
	}
	if _, err := os.Stat(cache); cache != "" && err == nil {
		os.Setenv(envTopologyFile, cache)
		s, err := pmix.Start(dir, node, manyJobs, segs, h)
		os.Unsetenv(envTopologyFile)
		if err == nil {
			return s, nil
		}
		os.Remove(cache) // unreadable or stale: discover once more
	}
	s, err := pmix.Start(dir, node, manyJobs, segs, h)
	if err == nil {
		saveTopology(cache, s.Topology())
	}
	return s, err
}

// startPMIx registers the job of app in the booted server, in a
// namespace of its own (its PMI key-value space's name), for the local
// ranks of app. Without it, the ranks get the tripwire's address. A DVM
// job that its client found needs none (Launch.NoPMIx) is not
// registered: a namespace on every node costs a small job about a tenth
// of its time (DVM.md, PMIx in a DVM).
func (d *Daemon) startPMIx(app protocol.Launch, mine []int) {
	if len(mine) == 0 || app.NoPMIx || !d.pmixUp() {
		return
	}
	spec := d.machine.Job()
	j := &pmixJob{job: app.Job, ns: kvsName(spec, app), tmpdir: d.pmix.tmpdir, nodes: rankNodes(app.RankNode),
		storeEnv: hashStoreEnv(os.Environ(), app)}
	var err error
	if app.Job != 0 { // a DVM's: what Open MPI leaves there (its session directories) goes with the job
		j.tmpdir, err = os.MkdirTemp(d.pmix.tmpdir, "job-")
	}
	if err == nil {
		err = d.pmix.server.RegisterJob(pmix.Job{Namespace: j.ns, Hosts: spec.Hosts, RankNode: app.RankNode, Node: d.cfg.ID,
			TmpDir: j.tmpdir, AppFirst: appFirsts(app), Parent: pmixParent(app)})
	}
	if err != nil {
		d.log.Warn("PMIx: the job's namespace", "error", err)
		d.pmixWhy = fmt.Errorf("it speaks PMIx (Open MPI), but the PMIx server of its node did not take the job: %w", err)
		d.removeJobDir(j)
		return
	}
	d.pmix.jobs[app.Job] = j
}

// pmixUp takes the booted server, once; false when there is none.
func (d *Daemon) pmixUp() bool {
	if d.pmixBoot != nil {
		b := <-d.pmixBoot
		d.pmixBoot = nil
		if b.err == nil {
			d.pmix = &pmixHost{server: b.server, tmpdir: b.tmpdir, jobs: map[int]*pmixJob{}, asked: map[int]pmixAsked{},
				across: map[string][]acrossOp{}, others: map[int]*otherJob{}, timeouts: map[*pmix.Reply]Timer{}}
		} else {
			d.log.Warn("no PMIx server", "error", b.err)
			d.pmixWhy = fmt.Errorf("it speaks PMIx (Open MPI), but the PMIx server of its node did not start: %w", b.err)
		}
	}
	return d.pmix != nil
}

// releasePMIx lets go of a DVM job's namespace once its ranks are gone:
// its fence and requests still waiting fail, the library forgets it, and
// its scratch directory is removed.
func (d *Daemon) releasePMIx(job int) {
	j := d.pmixJobNum(job)
	if j == nil {
		return
	}
	delete(d.pmix.jobs, job)
	for _, fences := range j.groupFences {
		j.fences = append(j.fences, fences...)
	}
	for _, f := range j.fences {
		d.pmixReply(f.Reply, nil, pmix.ErrFailed)
	}
	for id, a := range d.pmix.asked {
		if a.job == job {
			delete(d.pmix.asked, id)
			a.reply.Send(nil, pmix.ErrFailed)
		}
	}
	if err := d.pmix.server.DeregisterJob(j.ns); err != nil {
		d.log.Warn("PMIx: the job's namespace", "namespace", j.ns, "error", err)
	}
	d.removeJobDir(j)
}

// removeJobDir removes a DVM job's scratch directory; a plain mpirun's
// job has the server's, removed as the orted exits.
func (d *Daemon) removeJobDir(j *pmixJob) {
	if j.tmpdir != "" && j.tmpdir != d.pmix.tmpdir {
		os.RemoveAll(j.tmpdir)
	}
}

// errNotBooted is why a rank that speaks PMIx fails when mpirun decided
// that the job needs no server.
var errNotBooted = errors.New("it speaks PMIx (Open MPI), but mpirun started no PMIx server " +
	"(--pmix off, or --pmix auto found no MPI library in the program): run it with --pmix on")

// errJobNoPMIx is why a rank that speaks PMIx fails in a DVM job whose
// client decided that it needs no namespace.
var errJobNoPMIx = errors.New("it speaks PMIx (Open MPI), but its job has no PMIx namespace " +
	"(--pmix off, or --pmix auto found no MPI library in the program): submit it with --pmix on")

// pmixWhyOf is why job's ranks have no namespace: a DVM job submitted
// without one has its own reason, unless its DVM has no server at all.
func (d *Daemon) pmixWhyOf(job int) error {
	jr := d.jobs[job]
	if jr != nil && jr.app.NoPMIx && (d.pmix != nil || d.pmixBoot != nil) {
		return errJobNoPMIx
	}
	if d.pmixWhy == nil {
		return errNotBooted
	}
	return d.pmixWhy
}

// errDVMNotBooted is why a rank that speaks PMIx fails in a DVM started
// without PMIx servers.
var errDVMNotBooted = errors.New("it speaks PMIx (Open MPI), but its DVM was started with --pmix off")

// appFirsts is the first rank of each program of an MPMD launch; nil
// for one program.
func appFirsts(app protocol.Launch) []int {
	if len(app.More) == 0 {
		return nil
	}
	firsts := []int{0}
	for _, a := range app.More {
		firsts = append(firsts, a.First)
	}
	return firsts
}

// rankNodes lists the daemons that hold ranks, in order.
func rankNodes(rankNode []int) []int {
	nodes := slices.Clone(rankNode)
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// openMPIEnv is what every rank is told for Open MPI 4, beside the PMIx
// library's variables (other programs ignore it). schizo=ompi keeps a
// rank that no resource manager claims from declaring itself a
// singleton: with no schizo component left to claim it, it picks its
// PMIx bootstrap from the library's variables, even inside a Slurm or
// Flux allocation. The others are what ORTE tells
// its ranks, sparing each the probes of components that cannot apply:
// the PMI-1/2 and Cray PMIx paths, other bootstraps than PMIx (ess), and
// the test segments of every shared-memory method.
var openMPIEnv = []string{
	"OMPI_MCA_schizo=ompi",
	"OMPI_MCA_ess=pmi",
	"OMPI_MCA_pmix=^s1,s2,cray,isolated",
	"OMPI_MCA_shmem_RUNTIME_QUERY_hint=mmap",
}

// OpenMPIVars names the variables openMPIEnv sets. mpirun forwards no
// value of its own environment for them, which would come after them and
// undo them; a -x of one does, deliberately.
func OpenMPIVars() []string {
	names := make([]string, len(openMPIEnv))
	for i, kv := range openMPIEnv {
		names[i], _, _ = strings.Cut(kv, "=")
	}
	return names
}

// pmixEnvOf registers rank id of job jr with the library and returns
// what its client needs to find the server, and the job's namespace
// there; else the tripwire's variables, and no namespace.
func (d *Daemon) pmixEnvOf(jr *jobRanks, id int) ([]string, string, error) {
	j := d.pmixJobNum(jr.num)
	if j == nil {
		env, err := d.pmixTripwire(kvsName(d.machine.Job(), jr.app), id)
		return env, "", err
	}
	env, err := d.pmix.server.Client(j.ns, id)
	if err != nil {
		return nil, "", err
	}
	return append(env, j.storeEnv...), j.ns, nil
}

// hashStoreEnv makes the job's PMIx clients keep their data in the
// library's "hash" store when Open MPI's asynchronous modex is asked
// for by any program of the job (the whole job must use one store).
// Without a fence in MPI_Init, a rank may ask its server for a same-node
// peer's data while that peer's commit is being stored: PMIx 4.2's
// server then finds only the copy meant for other nodes in its own
// store, as the node-local copy went to the shared-memory store, and
// answers "not found" at once (MPI_Init: "PML add procs failed"). With
// the hash store both copies are the server's and it answers or waits
// as it should. Other jobs keep the shared-memory store, which holds the
// job's data once per node instead of once per rank.
func hashStoreEnv(base []string, app protocol.Launch) []string {
	envs := [][]string{app.Env}
	for _, a := range app.More {
		envs = append(envs, a.Env)
	}
	for _, env := range envs {
		if asyncModex(slices.Concat(base, openMPIEnv, env)) {
			return []string{"PMIX_GDS_MODULE=hash"}
		}
	}
	return nil
}

// asyncModex says whether env turns on Open MPI's asynchronous modex:
// its last setting of the parameter is one that Open MPI reads as true.
func asyncModex(env []string) bool {
	value := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "OMPI_MCA_pmix_base_async_modex="); ok {
			value = v
		}
	}
	if n, err := strconv.Atoi(value); err == nil {
		return n != 0
	}
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "true", "t", "yes", "y", "enabled":
		return true
	}
	return false
}

// pmixFenceEntered: every local rank still connected is in a fence over
// the whole job, or every one listed in a fence over some ranks. The
// library counts a rank that left without finalising as done; the machine must not (no fence completes without such a
// rank), so a rank that has begun to exit does not enter: the library saw
// its socket close only after the kernel marked it exiting. The node's
// data rides on the first entry, under a key of the node's own, so that
// each fence replaces the node's last data.
func (d *Daemon) pmixFenceEntered(f pmix.Fence) {
	j := d.pmixJobOf(f.Namespace)
	var jr *jobRanks
	if j != nil {
		jr = d.jobs[j.job]
	}
	if jr == nil || (f.Ranks != nil && f.Ranks[len(f.Ranks)-1] >= len(jr.app.RankNode)) {
		f.Reply.Send(nil, pmix.ErrFailed)
		return
	}
	var in []int
	for _, id := range slices.Sorted(maps.Keys(jr.ranks)) {
		if jr.starter.Live(id) && (f.Ranks == nil || slices.Contains(f.Ranks, id)) {
			in = append(in, id)
		}
	}
	if len(in) == 0 && f.Ranks != nil { // its ranks here are exiting: it cannot complete
		f.Reply.Send(nil, pmix.ErrFailed)
		return
	}
	d.armTimeout(f.Reply, f.Timeout)
	j.queueFence(protocol.GroupName(f.Ranks), f) // first: it may complete in a step
	data := []modex.KV{{Key: pmixKey(d.cfg.ID), Value: base64.StdEncoding.EncodeToString(f.Data)}}
	for _, id := range in {
		d.step(protocol.FenceEntered{Job: j.job, Rank: id, Puts: data, Group: f.Ranks})
		data = nil
	}
}

// queueFence keeps the node's part of a fence until it completes: one
// over the whole job (group ""), or over group.
func (j *pmixJob) queueFence(group string, f pmix.Fence) {
	if group == "" {
		j.fences = append(j.fences, f)
		return
	}
	if j.groupFences == nil {
		j.groupFences = map[string][]pmix.Fence{}
	}
	j.groupFences[group] = append(j.groupFences[group], f)
}

// nextGroupFence takes the node's oldest fence over group, if any.
func (j *pmixJob) nextGroupFence(group string) (pmix.Fence, bool) {
	fences := j.groupFences[group]
	if len(fences) == 0 {
		return pmix.Fence{}, false
	}
	if len(fences) == 1 {
		delete(j.groupFences, group)
	} else {
		j.groupFences[group] = fences[1:]
	}
	return fences[0], true
}

// pmixFenceDone answers the node's fence with every node's data.
func (d *Daemon) pmixFenceDone(done protocol.FenceDone) {
	if protocol.IsAcross(done.Group) {
		d.pmixAcrossDone(done)
		return
	}
	if done.Group != "" {
		d.pmixGroupFenceDone(done)
		return
	}
	j, view := d.pmixJobNum(done.Job), done.View
	if j == nil || len(j.fences) == 0 {
		return
	}
	var all []byte
	var err error
	if len(done.Gone) > 0 {
		d.log.Warn("PMIx: a fence over the job failed: ranks ended before entering it", "job", done.Job, "gone", done.Gone)
		err = pmix.ErrFailed
	}
	for _, node := range j.nodes {
		v, _ := view.Get(pmixKey(node))
		b, e := base64.StdEncoding.DecodeString(v)
		if e != nil {
			err = pmix.ErrFailed
		}
		all = append(all, b...)
	}
	for _, f := range j.fences {
		if f.Collect {
			d.pmixReply(f.Reply, all, err)
		} else {
			d.pmixReply(f.Reply, nil, err)
		}
	}
	j.fences = nil
}

// pmixGroupFenceDone answers the node's oldest fence over the group with
// the data of the nodes that hold its ranks, or fails it when some of
// them left before entering it.
func (d *Daemon) pmixGroupFenceDone(done protocol.FenceDone) {
	j := d.pmixJobNum(done.Job)
	if j == nil {
		return
	}
	f, ok := j.nextGroupFence(done.Group)
	if !ok {
		return // one that failed: its members here had all left
	}
	if len(done.Gone) > 0 {
		d.log.Warn("PMIx: a fence over some ranks failed: ranks of it ended before entering it", "job", done.Job,
			"ranks", done.Group, "gone", done.Gone)
		d.pmixReply(f.Reply, nil, pmix.ErrFailed)
		return
	}
	var all []byte
	for _, kv := range done.Puts {
		b, err := base64.StdEncoding.DecodeString(kv.Value)
		if err != nil {
			d.pmixReply(f.Reply, nil, pmix.ErrFailed)
			return
		}
		all = append(all, b...)
	}
	if !f.Collect {
		all = nil
	}
	d.pmixReply(f.Reply, all, nil)
}

// pmixDirectModex sends the library's request for a remote rank's data
// (of a local rank's job, or of a job connected to it) to that rank's
// daemon.
func (d *Daemon) pmixDirectModex(e pmixDirectModex) {
	job, ok := 0, false
	if d.pmix != nil {
		job, ok = d.pmixPeerJob(e.proc.Namespace)
	}
	if !ok {
		e.reply.Send(nil, pmix.ErrFailed)
		return
	}
	d.pmix.lastID++
	d.pmix.asked[d.pmix.lastID] = pmixAsked{job, e.reply}
	d.step(protocol.DirectModexWanted{ID: d.pmix.lastID, Job: job, Rank: e.proc.Rank})
}

// serveModex asks the library for a local rank's data, for another
// daemon; the answer comes back through the loop.
func (d *Daemon) serveModex(a protocol.ServeModex) {
	j := d.pmixJobNum(a.Job)
	if j == nil { // carried out in the loop: the machine hears it next
		d.next = append(d.next, protocol.ModexServed{ID: a.ID, From: a.From, Err: pmix.ErrUnavailable.Error()})
		return
	}
	d.pmix.server.LocalData(j.ns, a.Rank, func(data []byte, err error) {
		served := protocol.ModexServed{ID: a.ID, From: a.From, Data: data}
		if err != nil {
			served.Err = err.Error()
		}
		d.post(served)
	})
}

// modexAnswered gives the library the answer to its request.
func (d *Daemon) modexAnswered(a protocol.ModexAnswered) {
	if d.pmix == nil {
		return
	}
	if asked, ok := d.pmix.asked[a.ID]; ok {
		delete(d.pmix.asked, a.ID)
		var err error
		if a.Err != "" {
			err = pmix.ErrNotFound
			d.log.Debug("direct modex", "error", a.Err)
		}
		asked.reply.Send(a.Data, err)
	}
}

// pmixKey names a node's data in the job's key-value space; PMI clients
// cannot reach it, as their keys never start with a NUL.
func pmixKey(node int) string { return "\x00pmix/" + strconv.Itoa(node) }

// settlePMIx makes sure the loop has what rank id's PMIx client (of
// namespace ns) told the library before it exited with status: the
// library's last word of a client that exited 0, which may be its
// finalize, is waited for; a rank killed or failed has nothing to say
// that would change what its end means.
func (d *Daemon) settlePMIx(ns string, id, status int) {
	switch {
	case d.pmix == nil:
	case status == 0 && ns != "":
		d.pmix.server.Settle(ns, id, ms(d.cfg.Timeouts.PMIDrainMS))
	default:
		d.pmix.server.Sync(ms(d.cfg.Timeouts.PMIDrainMS))
	}
}

// stopPMIx finalises the library and removes its rendezvous directory,
// whether or not the job used it.
func (d *Daemon) stopPMIx() {
	b := pmixBoot{}
	switch {
	case d.pmix != nil:
		b = pmixBoot{server: d.pmix.server, tmpdir: d.pmix.tmpdir}
	case d.pmixBoot != nil:
		b = <-d.pmixBoot
	}
	if b.server != nil {
		d.finalizePMIx(b.server)
	}
	if b.tmpdir != "" {
		os.RemoveAll(b.tmpdir)
	}
}

// finalizePMIx finalises the library, waiting for it at most the
// pmi-drain bound: a server thread deadlocked on a store's lock (see
// reserveStore) never lets it finish, and the orted then exits without
// it, which ends the library's threads with the process.
func (d *Daemon) finalizePMIx(s *pmix.Server) {
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(ms(d.cfg.Timeouts.PMIDrainMS)):
		d.log.Warn("the PMIx library did not finalise: exiting without it", "waited", ms(d.cfg.Timeouts.PMIDrainMS))
	}
}
