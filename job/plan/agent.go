package plan

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon"
	"prsh/daemon/protocol"
	"prsh/job"
	"prsh/job/compat"
	"prsh/spawn/agent"
)

// srunJob is the Slurm job whose steps the daemons are (srun), or ""
// when they start otherwise: srun if asked (--launcher srun, or a peer's
// spelling), or by default when the hosts are a Slurm allocation's and no
// --launch-agent is given; getenv reads mpirun's environment.
func srunJob(req Request, src hostSource, getenv func(string) string) (string, error) {
	env := req.Environment
	launcher, err := compat.Launcher(req.Launcher, append(slices.Clone(env.GMCA), env.MCA...), getenv)
	if err != nil {
		return "", err
	}
	switch {
	case launcher == compat.LauncherSSH:
		return "", nil
	case launcher == compat.LauncherSrun && req.LaunchAgent != "":
		return "", errors.New("--launcher srun and --launch-agent contradict each other")
	case launcher == compat.LauncherSrun && getenv("SLURM_JOB_ID") == "":
		return "", errors.New("--launcher srun: not inside a Slurm allocation (SLURM_JOB_ID is not set)")
	case launcher == compat.LauncherSrun:
		return getenv("SLURM_JOB_ID"), nil
	case req.LaunchAgent != "":
		return "", nil
	}
	return src.slurmJob, nil
}

// oneStep says whether mpirun starts all the daemons in one Slurm job
// step: inside the allocation its hosts come from, unless the user asked
// for a spawn tree (--spawn-degree), which then runs an srun per edge.
func oneStep(req Request, src hostSource, spec protocol.JobSpec) bool {
	return spec.SrunJob != "" && src.slurmJob == spec.SrunJob && !req.SpawnDegreeSet
}

// pickAgent picks the launch agent for the daemons of hosts (those of
// the job's nodes, then the spare ones): an external command if asked, a
// plain fork when the only host is this one (self), srun inside a Slurm
// job (spec.SrunJob), native ssh otherwise; this host, among several, is
// forked in any case, unless mpirun runs its ranks itself (own, this
// host first): then no agent when it is the only host.
func pickAgent(req Request, hosts []job.Host, spec protocol.JobSpec, self string, own bool, log hclog.Logger) (agent.Agent, error) {
	if spec.LaunchAgent != "" {
		a, err := agent.NewCommand(spec.LaunchAgent)
		if err != nil {
			return nil, usage(fmt.Errorf("--launch-agent: %w", err))
		}
		return a, nil
	}
	if own && len(hosts) == 1 {
		return nil, nil
	}
	fork := &agent.Fork{Logger: log.Named("fork")}
	local := -1
	if !own {
		local = slices.IndexFunc(hosts, func(h job.Host) bool { return isLocal(h.Name, self) })
	}
	if len(hosts) == 1 && local == 0 {
		return fork, nil
	}
	remote, err := remoteAgent(req, hosts, spec, self, log)
	if err != nil {
		return nil, err
	}
	if local >= 0 {
		return &agent.Split{Local: hosts[local].Name, Fork: fork, Remote: remote}, nil
	}
	return remote, nil
}

// remoteAgent starts the daemons of other hosts than this one: srun in a
// Slurm job, native ssh otherwise.
func remoteAgent(req Request, hosts []job.Host, spec protocol.JobSpec, self string, log hclog.Logger) (agent.Agent, error) {
	if spec.SrunJob != "" {
		if _, err := exec.LookPath("srun"); err != nil {
			return nil, usage(fmt.Errorf("inside Slurm job %s the daemons start through srun: %w; --launcher ssh starts them with ssh", spec.SrunJob, err))
		}
		if spec.OneStep {
			return &agent.SrunStep{JobID: spec.SrunJob, Logger: log.Named("srun")}, nil
		}
		return &agent.Srun{JobID: spec.SrunJob, Logger: log.Named("srun")}, nil
	}
	a, err := agent.NewSSH(agent.SSHOptions{
		ConfigFile: spec.SSHConfig, SystemConfigFile: spec.SSHSystemConfig,
		ConnectTimeout: req.SSHConnectTimeout,
		MaxSessions:    spec.MaxSessions, Logger: log.Named("ssh"),
	})
	if err == nil {
		err = a.CheckHosts(remoteHosts(hosts, self))
	}
	if err != nil {
		return nil, usage(err)
	}
	return a, nil
}

// describeAgent says how the daemons start, for -v and
// --display-allocation.
func describeAgent(a agent.Agent) string {
	switch a := a.(type) {
	case *agent.Srun:
		return a.String()
	case *agent.SrunStep:
		return a.String()
	case *agent.Command:
		return "the launch agent " + a.String()
	case *agent.Fork:
		return "a fork on this host"
	case *agent.Split:
		return describeAgent(a.Remote) + ", and a fork on this host for " + a.Local
	}
	return "ssh"
}

// describeLaunch is describeAgent, and who runs this host's ranks when
// mpirun does (own).
func describeLaunch(a agent.Agent, own bool) string {
	switch {
	case own && a == nil:
		return "none: mpirun runs the ranks of this host"
	case own:
		return describeAgent(a) + ", and mpirun runs the ranks of this host"
	}
	return describeAgent(a)
}

// displayAgent prints how the daemons start (--display-allocation).
func displayAgent(w io.Writer, a agent.Agent, own bool) {
	fmt.Fprintf(w, "mpirun: daemons start through %s\n", describeLaunch(a, own))
}

// remoteHosts are the names of other hosts than this one.
func remoteHosts(hosts []job.Host, self string) []string {
	var names []string
	for _, h := range hosts {
		if !isLocal(h.Name, self) {
			names = append(names, h.Name)
		}
	}
	return names
}

// listenIP is the address mpirun listens on: --listen-ip, else the
// local address that reaches the first of hosts on another host.
func listenIP(listen string, a agent.Agent, hosts []job.Host, self string) string {
	if listen != "" {
		return listen
	}
	remote := remoteHosts(hosts, self)
	if _, ok := a.(*agent.Fork); ok || len(remote) == 0 {
		return "127.0.0.1"
	}
	if split, ok := a.(*agent.Split); ok {
		a = split.Remote
	}
	target := remote[0]
	if i := strings.LastIndexByte(target, '@'); i >= 0 {
		target = target[i+1:]
	}
	target = net.JoinHostPort(target, "22")
	if r, ok := a.(interface{ Address(string) (string, error) }); ok {
		if addr, err := r.Address(remote[0]); err == nil {
			target = addr
		}
	}
	return daemon.IPToward(target)
}
