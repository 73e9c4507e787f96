package plan

import (
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon"
	"prsh/daemon/protocol"
	"prsh/job"
	"prsh/spawn/agent"
)

// pickAgent picks the launch agent: an external command if asked, a plain
// fork when the only node is this host (self), native ssh otherwise.
func pickAgent(req Request, m *job.Map, spec protocol.JobSpec, self string, log hclog.Logger) (agent.Agent, error) {
	if spec.LaunchAgent != "" {
		a, err := agent.NewCommand(spec.LaunchAgent)
		if err != nil {
			return nil, usage(fmt.Errorf("--launch-agent: %w", err))
		}
		return a, nil
	}
	fork := &agent.Fork{Logger: log.Named("fork")}
	local := isLocal(m.Nodes[0].Name, self) // localFirst put this host first
	if len(m.Nodes) == 1 && local {
		return fork, nil
	}
	a, err := agent.NewSSH(agent.SSHOptions{
		ConfigFile: spec.SSHConfig, SystemConfigFile: spec.SSHSystemConfig,
		ConnectTimeout: req.SSHConnectTimeout,
		MaxSessions:    spec.MaxSessions, Logger: log.Named("ssh"),
	})
	if err == nil {
		err = a.CheckHosts(remoteHosts(m, self))
	}
	if err != nil {
		return nil, usage(err)
	}
	if local {
		return &agent.Split{Local: m.Nodes[0].Name, Fork: fork, Remote: a}, nil
	}
	return a, nil
}

// remoteHosts are the host list's names of other hosts than this one.
func remoteHosts(m *job.Map, self string) []string {
	var names []string
	for _, h := range m.Nodes {
		if !isLocal(h.Name, self) {
			names = append(names, h.Name)
		}
	}
	return names
}

// listenIP is the address mpirun listens on: --listen-ip, else the
// local address that reaches the first node of another host.
func listenIP(listen string, a agent.Agent, m *job.Map, self string) string {
	if listen != "" {
		return listen
	}
	remote := remoteHosts(m, self)
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
