package sim

// What the processes of a launch cost while they wait, on shared cores:
// each kind of process takes a share of a core for as long as it lives
// (its timers, pings, runtime), more when more processes are runnable.

// Kind is a kind of process of a launch on a node (or mpirun's).
type Kind int

const (
	KindMpirun Kind = iota
	KindOrted
	KindAgent // the launch agent, from its session's start until it runs the node's shell
	KindShell // the node's shell, which waits for its orted
	KindGuard // a rank's guard, while the rank runs
	KindRank
	NumKinds
)

var kindNames = [NumKinds]string{"mpirun", "orted", "agent", "shell", "guard", "rank"}

func (k Kind) String() string {
	if k < 0 || k >= NumKinds {
		return "kind?"
	}
	return kindNames[k]
}

// KindNamed is the kind of that name.
func KindNamed(name string) (Kind, bool) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// IdleCost is the share of a core one waiting process takes: Share with
// nothing else runnable, PerLoad more for each runnable piece of work.
type IdleCost struct {
	Share, PerLoad float64
}

// at is the share at this load.
func (c IdleCost) at(load int) float64 { return c.Share + c.PerLoad*float64(load) }

// IdleCosts are the idle costs of every kind of process.
type IdleCosts [NumKinds]IdleCost

// Daemons gives mpirun and every orted the same share: the old single
// term of the model.
func Daemons(share float64) IdleCosts {
	var c IdleCosts
	c[KindMpirun].Share, c[KindOrted].Share = share, share
	return c
}

// idlePeriodMS is how often a live process's idle CPU is queued.
const idlePeriodMS = 250

// idleWhile queues the idle CPU of a process of kind k on the shared
// cores every idlePeriodMS while alive says it lives and mpirun runs.
func (s *Sim) idleWhile(k Kind, alive func() bool) {
	c := s.opt.Idle[k]
	if s.opt.Cores <= 0 || c.Share <= 0 && c.PerLoad <= 0 {
		return
	}
	period := idlePeriodMS * s.opt.TicksPerMS
	var tick func()
	tick = func() {
		if !alive() || s.Done {
			return
		}
		work := int64(c.at(s.load()) * float64(period))
		s.IdleCPU[k] += work
		s.compute(work, nil)
		s.push(s.now+period, tick)
	}
	s.push(s.now+period, tick)
}

// idle queues daemon d's idle CPU while it lives.
func (s *Sim) idle(d *daemon, k Kind) {
	s.idleWhile(k, func() bool { return !d.dead })
}

// load is the work in progress on the shared cores: what the kernel
// counts as runnable. First come first served keeps no such count.
func (s *Sim) load() int {
	if s.fair == nil {
		return 0
	}
	return len(s.fair.work)
}
