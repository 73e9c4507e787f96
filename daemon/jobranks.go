package daemon

import (
	"maps"
	"slices"
	"syscall"

	"prsh/daemon/protocol"
	"prsh/iof"
	"prsh/job/binding"
	"prsh/ranks"
	"prsh/ranks/guard/early"
)

// jobRanks is one job's ranks at this daemon, as the driver holds them:
// a plain mpirun's job 0, or a DVM job from its StartRanks to its
// ReleaseJob. Jobs of a DVM run at once, each with its own starter (its
// guard and cgroup), PMI services and the ranks waiting in its
// collectives.
type jobRanks struct {
	num     int
	app     protocol.Launch
	starter ranks.Starter
	ranks   map[int]*rank // by rank, as the PMI bridge knows them

	fenceWaiters  []*pmiService       // local ranks in the current fence
	ringWaiters   map[int]*pmiService // local ranks in the current ring, by rank
	gatherWaiters []*pmiService       // local ranks in the current allgather
}

// newJobRanks makes job num's driver state and its starter.
func (d *Daemon) newJobRanks(num int, app protocol.Launch) *jobRanks {
	jr := &jobRanks{num: num, app: app, ranks: map[int]*rank{}, ringWaiters: map[int]*pmiService{}}
	jr.starter = d.newStarter(num)
	d.jobs[num] = jr
	return jr
}

// newStarter makes what starts job's ranks on the node, and reports to
// the loop what becomes of them.
func (d *Daemon) newStarter(job int) ranks.Starter {
	log, report := d.log.Named("ranks"), func(ev ranks.Event) { d.post(rankReport{job, ev}) }
	if d.cfg.Ranks != nil {
		return d.cfg.Ranks(log, report)
	}
	if d.nodeGuard == nil {
		d.nodeGuard = ranks.NewNodeGuard(log)
	}
	return d.nodeGuard.Job(log, report)
}

// prestartGuard starts the node's guard ahead of the first rank, so that
// its start (milliseconds: a process of its own) runs beside the
// daemon's own work, mpirun's planning or an orted's part of the launch,
// instead of before the ranks' start: mpirun where its node runs ranks,
// an orted at its Welcome unless the job places none of its ranks there
// (JobSpec.Rankless; a DVM's orted keeps its guard for every job). A
// guard that fails to start is started again, and its error reported,
// at the first rank.
func (d *Daemon) prestartGuard(job protocol.JobSpec) {
	if d.cfg.Ranks != nil || !d.holdsRanks(job) {
		if d.isRoot() {
			early.Drop() // mpirun's guard started at init has no rank to guard here
		}
		return
	}
	if d.nodeGuard == nil {
		d.nodeGuard = ranks.NewNodeGuard(d.log.Named("ranks"))
	}
	d.nodeGuard.Prestart(ms(d.cfg.Timeouts.GuardStoppedMS))
}

// holdsRanks says whether the job places ranks on this daemon: mpirun
// knows its Launch; an orted is not among the JobSpec's Rankless.
func (d *Daemon) holdsRanks(job protocol.JobSpec) bool {
	if d.isRoot() {
		return slices.Contains(d.cfg.App.RankNode, 0)
	}
	ids, err := binding.ParseList(job.Rankless)
	return err != nil || !slices.Contains(ids, d.cfg.ID)
}

// signalRanks signals job's ranks, or every job's (protocol.AllJobs). A
// DVM job's ranks may be held (its client's Ctrl-Z, or a client behind on
// their output): its SIGTERM is followed by a SIGCONT, so that they end
// within their kill grace rather than at its SIGKILL.
func (d *Daemon) signalRanks(sig syscall.Signal, job int) {
	for _, num := range slices.Sorted(maps.Keys(d.jobs)) {
		if job == protocol.AllJobs || job == num {
			d.jobs[num].starter.Signal(sig)
			if sig == syscall.SIGTERM && num != 0 {
				d.jobs[num].starter.Signal(syscall.SIGCONT)
			}
		}
	}
}

// closeStarters lets go of every job's starter as the daemon ends.
func (d *Daemon) closeStarters() {
	for _, jr := range d.jobs {
		jr.starter.Close()
	}
}

// plainApp is the Launch of a plain mpirun's one job (none before it
// came).
func (d *Daemon) plainApp() protocol.Launch {
	if jr, ok := d.jobs[0]; ok {
		return jr.app
	}
	return protocol.Launch{}
}

// jobOutput marks each chunk of a DVM job's ranks with the job, so that
// mpirun routes it to the job's client.
type jobOutput struct {
	job  int
	sink iof.Sink
}

func (o jobOutput) Send(c iof.Chunk) error {
	c.Job = o.job
	return o.sink.Send(c)
}

// outputOf is where job's ranks write: mpirun's sink, through the job's
// mark in a DVM.
func (d *Daemon) outputOf(job int) iof.Sink {
	if job == 0 {
		return d.sink
	}
	return jobOutput{job, d.sink}
}
