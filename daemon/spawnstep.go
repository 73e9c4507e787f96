package daemon

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"prsh/job/hostrange"
	"prsh/spawn"
	"prsh/spawn/agent"
)

// SlurmStepFlag makes an orted one task of a job step that started the
// orteds of many nodes with the same argv (agent.SrunStep): it reads the
// step's hosts table after the secret on its stdin (StepTable) and finds
// its id there by its node's name.
const SlurmStepFlag = "--slurm-step"

// spawnStep starts the orteds of nodes with one call of a Group agent (one
// Slurm job step); a node of this host (agent.Split's Local) is forked
// as usual. Without a Group agent each node is spawned on its own.
func (d *Daemon) spawnStep(nodes []spawn.Node) {
	a, _ := d.launchAgent() // without one, each node's spawn reports why
	group, local := groupOf(a)
	var members []spawn.Node
	for _, n := range nodes {
		if group == nil || n.Host == local {
			d.spawn(n)
		} else {
			members = append(members, n)
		}
	}
	if len(members) == 0 {
		return
	}
	hosts := make([]string, len(members))
	for i, n := range members {
		hosts[i] = n.Host
	}
	argv := ortedCommand(d.machine.Job(), d.addr, SlurmStepFlag)
	stdin := append(d.secretLine(), StepTable(members)...)
	ctx, started := agent.InTurn(d.ctx, d.lastSpawn)
	d.lastSpawn = started
	go func() {
		procs, err := group.StartGroup(ctx, hosts, argv, stdin)
		agent.PassTurn(ctx)
		for i, n := range members {
			var p agent.Process
			if err == nil {
				p = procs[i]
			}
			if !d.post(spawned{n.ID, p, err}) && p != nil {
				p.Close()
			}
		}
	}()
}

// groupOf returns the Group agent inside a, and the host it forks
// instead; nil when a starts each node on its own.
func groupOf(a agent.Agent) (agent.Group, string) {
	switch a := a.(type) {
	case agent.Group:
		return a, ""
	case *agent.Split:
		if g, ok := a.Remote.(agent.Group); ok {
			return g, a.Local
		}
	}
	return nil, ""
}

// StepTable is the line after the secret on a step's stdin: each member's
// id and host as "ID HOST ID HOST …", in the order of nodes.
func StepTable(nodes []spawn.Node) []byte {
	var b strings.Builder
	for i, n := range nodes {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d %s", n.ID, n.Host)
	}
	b.WriteByte('\n')
	return []byte(b.String())
}

// FindInStepTable returns the id of node in a StepTable line.
func FindInStepTable(line, node string) (int, error) {
	words := strings.Fields(line)
	if len(words)%2 != 0 {
		return 0, fmt.Errorf("the job step's hosts table is cut short")
	}
	var hosts []string
	for i := 0; i < len(words); i += 2 {
		if words[i+1] == node {
			id, err := strconv.Atoi(words[i])
			if err != nil || id < 1 {
				return 0, fmt.Errorf("the job step's hosts table has a bad id %q", words[i])
			}
			return id, nil
		}
		hosts = append(hosts, words[i+1])
	}
	slices.Sort(hosts)
	return 0, fmt.Errorf("node %s is not among the job step's hosts (%s)", node, hostrange.Ranges(hosts))
}
