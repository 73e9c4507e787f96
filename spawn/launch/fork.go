package launch

import (
	"context"
	"errors"
	"os/exec"

	"github.com/hashicorp/go-hclog"
)

// Fork is the Agent for a single-node run: it execs argv directly on this
// machine, without a shell, and ignores host. The zero value is ready to use.
type Fork struct {
	// Logger gets the command's output at debug level; nil discards.
	Logger hclog.Logger
}

var _ Agent = (*Fork)(nil)

// Launch implements Agent.
func (f *Fork) Launch(ctx context.Context, host string, argv []string, stdin []byte) (Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("fork: empty argv")
	}
	log := orNull(f.Logger).With("host", host)
	return startExec(ctx, exec.Command(argv[0], argv[1:]...), stdin, log)
}
