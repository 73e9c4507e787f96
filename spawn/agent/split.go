package agent

import "context"

// Split is the Agent of mpirun when the host list names this host among
// others: that node's daemon is forked here, as on a single-node run, and
// every other node goes through Remote. mpirun makes the local node a
// direct child of its own, so no other daemon is asked to start it.
type Split struct {
	Local  string // the host list's name of this host
	Fork   *Fork
	Remote Agent
}

var _ Agent = (*Split)(nil)

// Start implements Agent.
func (s *Split) Start(ctx context.Context, host string, argv []string, stdin []byte) (Process, error) {
	if host == s.Local {
		return s.Fork.Start(ctx, host, argv, stdin)
	}
	return s.Remote.Start(ctx, host, argv, stdin)
}
