package agent

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Command is the Agent that runs an external launcher per node, built from
// a template such as "ssh -F cfg %h", "rsh %h" or "srun -N1 -n1 -w %h".
//
// The orted argv is appended to the template's words, each word
// shell-quoted when it needs it: ssh and rsh join their arguments and the
// remote shell splits them again. A launcher that execs its arguments
// directly (srun) gets the same words, which is the same thing as long as
// the argv has no word that needs quoting.
type Command struct {
	// Logger gets the launcher's output at debug level; nil discards.
	Logger hclog.Logger

	words []string
}

var _ Agent = (*Command)(nil)

// NewCommand parses template: it is split into words like a simple shell
// (single and double quotes, backslash), then in each word %h stands for the
// host and %% for a literal %. A template without %h is allowed (a
// launcher may find the node otherwise); an empty one is not.
func NewCommand(template string) (*Command, error) {
	words, err := splitWords(template)
	if err != nil {
		return nil, fmt.Errorf("launch template %q: %w", template, err)
	}
	if len(words) == 0 {
		return nil, errors.New("launch template is empty")
	}
	for _, w := range words {
		if _, err := expandHost(w, "h"); err != nil {
			return nil, fmt.Errorf("launch template %q: %w", template, err)
		}
	}
	return &Command{words: words}, nil
}

// Argv returns the launcher's command line for running argv on host.
func (c *Command) Argv(host string, argv []string) []string {
	out := make([]string, 0, len(c.words)+len(argv))
	for _, w := range c.words {
		w, _ = expandHost(w, host) // checked by NewCommand
		out = append(out, w)
	}
	for i, w := range argv {
		out = append(out, quoteWord(w, i == 0))
	}
	return out
}

// String returns the template's words, quoted.
func (c *Command) String() string {
	return strings.Join(quoteAll(c.words), " ")
}

// quoteAll quotes each word as a shell would need it, without the
// first-word rule of Quote.
func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quoteWord(w, false)
	}
	return out
}

// Start implements Agent.
func (c *Command) Start(ctx context.Context, host string, argv []string, stdin []byte) (Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("command: empty argv")
	}
	full := c.Argv(host, argv)
	log := orNull(c.Logger).With("host", host)
	if err := takeTurn(ctx); err != nil {
		return nil, err
	}
	first, err := startExec(ctx, exec.Command(full[0], full[1:]...), stdin, log)
	PassTurn(ctx)
	if err != nil && !launcherDropped(err) {
		return nil, err
	}
	// Later tries are not bounded by ctx, which bounds this call only.
	relaunch := func() (Process, error) {
		return startExec(context.Background(), exec.Command(full[0], full[1:]...), stdin, log)
	}
	return newDropRetry(first, err, relaunch, log), nil
}
