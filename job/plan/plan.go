package plan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"prsh/daemon"
	"prsh/daemon/protocol"
	"prsh/internal/tcp"
	"prsh/job"
	"prsh/job/binding"
	"prsh/spawn"
	"prsh/spawn/agent"
)

// UsageError is an error in what the user asked for: mpirun says so and
// points to --help.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

func usage(err error) error { return UsageError{err} }

// Make plans the job req asks for, run from here: mpirun's daemon
// configuration, without what mpirun's own process provides (the
// secret, its standard streams, signals and clock). Errors in req are
// UsageErrors; a program that cannot be staged is a stage.PlanError.
// Warnings and the --display-* reports go to here.Stderr as they arise.
func Make(req Request, here Here) (daemon.Config, error) {
	if len(req.Args) == 0 && req.Appfile == "" {
		return daemon.Config{}, usage(errors.New("no command given"))
	}
	if _, err := bindPolicy(req.Placement, 1); err != nil {
		return daemon.Config{}, usage(err)
	}
	progs, err := programs(req, here)
	if err != nil {
		return daemon.Config{}, usage(err)
	}
	np := totalRanks(progs)
	placed, src, err := jobMap(req, here, np, len(progs))
	if err != nil {
		return daemon.Config{}, err
	}
	placed, spare := leaveIdle(req, placed)
	if req.DisplayMap {
		displayMap(here.Stderr, placed, spare, progs)
	}
	m, daemonIndex, err := localFirst(placed, here.Hostname)
	if err != nil {
		return daemon.Config{}, usage(err)
	}
	spec, err := jobSpec(req, here, m)
	if err != nil {
		return daemon.Config{}, err
	}
	if spec.SrunJob, err = srunJob(req, src, here.environ().getenv); err != nil {
		return daemon.Config{}, usage(err)
	}
	spec.OneStep = oneStep(req, src, spec)
	if req.SpawnDegree == "auto" {
		here.Log.Info("spawn degree auto", "chose", spec.SpawnDegree, "nodes", len(m.Nodes),
			"hop", req.SpawnHopHint, "cost", req.SpawnCostHint)
	}
	app, err := application(req, here, m, progs)
	if err != nil {
		return daemon.Config{}, usage(err)
	}
	if spec.NoPMIx, err = NoPMIx(req.PMIx, app, here.Log); err != nil {
		return daemon.Config{}, usage(err)
	}
	if !spec.NoPMIx && req.Orted == "" {
		spec.OrtedPath = withPMIx(spec.OrtedPath)
	}
	if err := pmixSegments(&spec, here.Environ, app); err != nil {
		return daemon.Config{}, usage(err)
	}
	own := ownNode(m, spec, here.Hostname)
	if own {
		runOwnNode(&spec, &app)
	}
	spec.Rankless = rankless(spec.Daemons, app.RankNode)
	var launcher agent.Agent
	bind := ""
	if !req.Submit {
		hosts := slices.Concat(m.Nodes, spare) // spare hosts may get orteds for child jobs
		if launcher, err = pickAgent(req, hosts, spec, here.Hostname, own, here.Log); err != nil {
			return daemon.Config{}, err
		}
		here.Log.Info("daemons start through "+describeLaunch(launcher, own), "hosts without ranks", len(spare))
		if req.DisplayAllocation {
			displayAgent(here.Stderr, launcher, own)
		}
		bind = listenIP(req.ListenIP, launcher, hosts, here.Hostname)
	}
	if spec.Stage, err = stagePlan(req, here.Hostname, app); err != nil {
		return daemon.Config{}, err
	}
	limit, err := timeout(req.Timeout)
	if err != nil {
		return daemon.Config{}, usage(err)
	}
	ports, err := tcp.ParsePorts(req.PortRange)
	if err != nil {
		return daemon.Config{}, usage(fmt.Errorf("--port-range: %w", err))
	}
	spec.PortRange = ports.String()
	return daemon.Config{
		ID: 0, Node: spec.Hosts[0], Log: here.Log,
		Bind: bind, Ports: ports,
		Job: spec, Nodes: nodes(m, own), App: app, Agent: launcher, Timeout: limit,
		Remap:     remapper(req, placed, daemonIndex, np, own),
		ChildJobs: childJobSlots(req, m, spec, own, spare),
	}, nil
}

// leaveIdle takes the hosts that hold no rank out of m, as Hydra and
// Open MPI's --novm do: no orted starts there unless a child job is
// placed on one (they are returned as spare). They stay in the map with
// --every-host; with --on-unreachable skip, which may place ranks on
// them in place of nodes that fail; and for a DVM (which sets
// EveryHost) or a job submitted to one, whose nodes are the DVM's.
func leaveIdle(req Request, m *job.Map) (*job.Map, []job.Host) {
	if skip, _ := onUnreachable(req.OnUnreachable); skip || req.EveryHost || req.Submit {
		return m, nil
	}
	return m.WithRanks()
}

// rankless lists the orteds (ids 1 to daemons-1) that no rank is
// placed on, as JobSpec.Rankless says them.
func rankless(daemons int, rankNode protocol.RankMap) string {
	holds := rankNode.Holders(daemons)
	var none []int
	for id := 1; id < daemons; id++ {
		if !holds[id] {
			none = append(none, id)
		}
	}
	list := binding.List(none)
	if len(list) > maxRankless {
		return "" // each orted gets the list: past this, an idle guard costs less
	}
	return list
}

// maxRankless bounds JobSpec.Rankless: the ranges of a placement that
// leaves whole stretches of nodes out are a few bytes.
const maxRankless = 4 << 10

// childJobSlots are the slots of each daemon's node, where child jobs
// (MPI_Comm_spawn) are placed, and the spare hosts after them; mpirun's
// own node has slots only when it runs its ranks.
func childJobSlots(req Request, m *job.Map, spec protocol.JobSpec, own bool, spare []job.Host) daemon.ChildJobSlots {
	slots := make([]int, spec.Daemons)
	for i, h := range m.Nodes {
		if id := daemonOf(i, own); id < len(slots) {
			slots[id] = h.Slots
		}
	}
	opt, _ := options(req, 0) // checked when the first map was built
	return daemon.ChildJobSlots{Slots: slots, Spare: spare, Oversubscribe: opt.Oversubscribe}
}

// jobMap places np ranks, the sum of the -np of several programs, on
// the hosts the user named or the batch system granted.
func jobMap(req Request, here Here, np, programs int) (*job.Map, hostSource, error) {
	src, err := hostList(req, here)
	if err != nil {
		return nil, src, usage(err)
	}
	src.hosts = slices.DeleteFunc(src.hosts, func(h job.Host) bool { return slices.Contains(req.Lost, h.Name) })
	here.Log.Debug("hosts", "from", src.from, "nodes", len(src.hosts))
	if req.DisplayAllocation {
		displayAllocation(here.Stderr, src)
	}
	m, err := placeRanks(req, src, np, programs)
	if err != nil {
		return nil, src, usage(err)
	}
	return m, src, nil
}

// nodes are the daemons mpirun spawns: every node's, or, when it runs
// its own node's ranks (own), the others'.
func nodes(m *job.Map, own bool) []spawn.Node {
	var out []spawn.Node
	for i, h := range m.Nodes {
		if id := daemonOf(i, own); id > 0 {
			out = append(out, spawn.Node{ID: id, Host: h.Name})
		}
	}
	return out
}

// application is the launch message: the programs, their environment and
// where every rank runs.
func application(req Request, here Here, m *job.Map, progs []program) (protocol.Launch, error) {
	e := here.environ()
	env, err := e.jobEnv(req.Environment)
	if err != nil {
		return protocol.Launch{}, err
	}
	first, err := e.exports(progs[0].env)
	if err != nil {
		return protocol.Launch{}, err
	}
	target, err := stdinRank(req.Stdin, m.Size())
	if err != nil {
		return protocol.Launch{}, err
	}
	app := protocol.Launch{
		Argv: progs[0].argv, Env: append(env, first...), RankNode: make([]int, m.Size()),
		StdinRank: target, MergeStderr: req.MergeStderr,
	}
	for r, node := range m.RankNode {
		app.RankNode[r] = node + 1
	}
	if req.Wdir != "" {
		app.Wdir, app.WdirSet = absPath(req.Wdir, here.Dir), true
	} else {
		app.Wdir = here.Dir
	}
	if app.More, err = moreApps(progs, env, app.Wdir, app.WdirSet, e); err != nil {
		return protocol.Launch{}, err
	}
	if app.Bind, err = bindPolicy(req.Placement, m.Size()); err != nil {
		return protocol.Launch{}, err
	}
	return app, nil
}

// stdinRank parses --stdin: a rank, "all" or "none".
func stdinRank(value string, size int) (int, error) {
	switch value {
	case "all":
		return protocol.StdinAll, nil
	case "none":
		return protocol.StdinNone, nil
	}
	r, err := strconv.Atoi(value)
	if err != nil || r < 0 || r >= size {
		return 0, fmt.Errorf("--stdin %q: want a rank from 0 to %d, all or none", value, size-1)
	}
	return r, nil
}
