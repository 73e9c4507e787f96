package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Fork is the Agent for this machine's node (a single-node run, or the
// local node of a host list; see Split): it execs argv directly on this
// machine, without a shell, and ignores host. The zero value is ready to use.
type Fork struct {
	// Logger gets the command's output at debug level; nil discards.
	Logger hclog.Logger
}

var _ Agent = (*Fork)(nil)

// Start implements Agent.
func (f *Fork) Start(ctx context.Context, host string, argv []string, stdin []byte) (Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("fork: empty argv")
	}
	log := orNull(f.Logger).With("host", host)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = withoutSSHSession(os.Environ())
	return startExec(ctx, cmd, stdin, log)
}

// withoutSSHSession drops SSH_CONNECTION, which a forked daemon would
// otherwise inherit from the user's login and take for the address its
// parent reached it on: it was not reached over ssh.
func withoutSSHSession(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SSH_CONNECTION=") })
}
