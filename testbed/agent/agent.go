package agent

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"prsh/testbed/nodes"
)

// Exit statuses of the agent's own failures, as OpenSSH's client uses them.
const (
	exitConnect = 255 // no such node, no config: ssh's "could not resolve"
	exitExec    = 127 // the shell could not be started
)

// Main runs the agent on args (HOST COMMAND...): it returns only when the
// command could not be started, with the status to exit with.
func Main(args []string) int {
	s, err := newSession(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbed-agent: %v\n", err)
		return exitConnect
	}
	if err := s.wait(); err != nil {
		fmt.Fprintf(os.Stderr, "testbed-agent: %s: %v\n", s.host, err)
		return exitConnect
	}
	err = s.exec()
	fmt.Fprintf(os.Stderr, "testbed-agent: %s: %v\n", s.host, err)
	return exitExec
}

// session is one command to run on one node.
type session struct {
	cfg     Config
	host    string // the node's name
	spawner string // the node the agent was called on; "" for outside
	env     []string
	command string // for /bin/sh -c
}

func newSession(args []string) (*session, error) {
	if len(args) < 2 {
		return nil, errors.New("usage: testbed-agent HOST COMMAND...")
	}
	path := os.Getenv(EnvConfig)
	if path == "" {
		return nil, fmt.Errorf("%s is not set: run the launcher under testbed run or the lab's bench launch", EnvConfig)
	}
	cfg, err := Read(path)
	if err != nil {
		return nil, err
	}
	i := nodes.Index(args[0], cfg.Block, cfg.Nodes)
	if i == 0 {
		return nil, fmt.Errorf("%s: no such node in this testbed (%s … %s)",
			args[0], nodes.Name(1, cfg.Nodes), nodes.Name(cfg.Nodes, cfg.Nodes))
	}
	s := &session{cfg: cfg, host: nodes.Name(i, cfg.Nodes), spawner: os.Getenv(nodes.EnvNode),
		command: strings.Join(args[1:], " ")}
	s.env, err = s.nodeEnv(i, path)
	return s, err
}

// nodeEnv is what the testbed's ssh server gives a session, and the
// agent's config for the node's own spawns.
func (s *session) nodeEnv(i int, configPath string) ([]string, error) {
	addr, err := nodes.Addr(s.cfg.Block, i)
	if err != nil {
		return nil, err
	}
	from := "127.0.0.1"
	if j := nodes.Index(s.spawner, s.cfg.Block, s.cfg.Nodes); j > 0 {
		if a, err := nodes.Addr(s.cfg.Block, j); err == nil {
			from = a.String()
		}
	}
	env := append(nodes.LoginEnv(s.cfg.User), s.cfg.Env...)
	return append(env,
		"SSH_CONNECTION="+from+" 0 "+addr.String()+" 22",
		"SSH_CLIENT="+from+" 0 22",
		nodes.EnvNode+"="+s.host,
		nodes.EnvRun+"="+s.cfg.RunID,
		EnvConfig+"="+configPath,
	), nil
}

// wait spends the session's emulated cost: its slot of the spawner's
// serial time, reserved behind the slots before it, then the latency.
func (s *session) wait() error {
	if s.cfg.SpawnCost > 0 {
		end, err := s.reserveSlot()
		if err != nil {
			return err
		}
		time.Sleep(time.Until(end))
	}
	time.Sleep(s.cfg.Latency)
	return nil
}

// exec replaces the agent by /bin/sh -c COMMAND on the node: in a new
// session and $HOME like sshd's, in a UTS namespace of the node's name
// with UTS. The caller must have locked its goroutine to the main thread
// (the namespace is the thread's until exec).
func (s *session) exec() error {
	syscall.Setsid() // fails only for a group leader, which keeps its own
	if err := os.Chdir(nodes.HomeDir()); err != nil {
		return err
	}
	if s.cfg.UTS {
		if err := syscall.Unshare(syscall.CLONE_NEWUTS); err != nil {
			return fmt.Errorf("UTS namespace: %w", err)
		}
		if err := syscall.Sethostname([]byte(s.host)); err != nil {
			return fmt.Errorf("sethostname: %w", err)
		}
	}
	return syscall.Exec("/bin/sh", []string{"sh", "-c", s.command}, s.env)
}
