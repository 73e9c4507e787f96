// Package agent is the testbed's low-CPU launch agent, a stand-in for ssh
// that any launcher can use as its rsh agent:
//
//	testbed-agent HOST COMMAND...
//
// It runs COMMAND "on" HOST the way the testbed's ssh servers do (/bin/sh
// -c in a new session, the node's login environment, SSH_CONNECTION naming
// the node's own address, its hostname with UTS), but in place: the agent
// execs the command itself, with no crypto and no server in between. Before
// that it sleeps through its slot of the spawner's serial time (the spawn
// cost) and then the configured ssh latency, so that a launch on the
// testbed models a real cluster's ssh (each spawner has its own CPU)
// without spending this machine's.
//
// A spawner's slots are reserved back to back in its state file under a
// short flock, and each agent sleeps until its slot's absolute end. An
// flock held across the sleep would add, at each hand-over, the time this
// shared machine takes to wake the next agent (2–15 ms with tens of
// runnable processes): 0.1–1 s over 64 serial sessions, which a real
// spawner, on its own CPU, does not pay. A late wake-up now delays only
// its own session.
//
// The agent finds the cluster's settings in the file named by
// PRSH_TESTBED_AGENT, which the testbed writes into its directory and puts
// into the environment of the command under test and of every node process.
package agent

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvConfig names the agent's configuration file.
const EnvConfig = "PRSH_TESTBED_AGENT"

// Config is what the agent needs to know of its cluster.
type Config struct {
	Block, Nodes int    // the nodes' first loopback block, their number
	User         string // the login name, for USER and LOGNAME fallbacks
	RunID        string // PRSH_TESTBED_RUN of every node process
	// Latency is waited before the command runs, after a slot of
	// SpawnCost reserved behind the spawner's earlier ones, so that one
	// spawner's sessions open one by one.
	Latency, SpawnCost time.Duration
	UTS                bool     // each node's processes get its hostname
	Locks              string   // the directory of the spawners' state files (end of the last slot)
	Env                []string // added to every node process ("K=V")
}

// Write saves c to path, one "key value" line per setting.
func (c Config) Write(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "block %d\nnodes %d\nuser %s\nrun %s\n", c.Block, c.Nodes, c.User, c.RunID)
	fmt.Fprintf(&b, "latency %s\nspawn-cost %s\nuts %t\nlocks %s\n", c.Latency, c.SpawnCost, c.UTS, c.Locks)
	for _, kv := range c.Env {
		if strings.Contains(kv, "\n") {
			return fmt.Errorf("testbed: agent config: environment value with a newline: %q", kv)
		}
		fmt.Fprintf(&b, "env %s\n", kv)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Read loads a config written by Write.
func Read(path string) (Config, error) {
	var c Config
	f, err := os.Open(path)
	if err != nil {
		return c, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		if err := c.set(key, val); err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
	}
	return c, sc.Err()
}

func (c *Config) set(key, val string) error {
	var err error
	switch key {
	case "block":
		c.Block, err = strconv.Atoi(val)
	case "nodes":
		c.Nodes, err = strconv.Atoi(val)
	case "user":
		c.User = val
	case "run":
		c.RunID = val
	case "latency":
		c.Latency, err = time.ParseDuration(val)
	case "spawn-cost":
		c.SpawnCost, err = time.ParseDuration(val)
	case "uts":
		c.UTS, err = strconv.ParseBool(val)
	case "locks":
		c.Locks = val
	case "env":
		c.Env = append(c.Env, val)
	case "":
	default:
		return fmt.Errorf("unknown setting %q", key)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}
