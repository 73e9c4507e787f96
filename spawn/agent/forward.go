package agent

import (
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// resolveForwardAgent sets the agent socket that ForwardAgent hands to the
// node: "yes" the one in SSH_AUTH_SOCK, a path or $NAME that one, "no"
// none. The orted on the node then reaches its own children with the
// user's agent, as a shell there would after "ssh -A".
func (t *target) resolveForwardAgent(v string) error {
	switch strings.ToLower(v) {
	case "", "no":
		return nil
	case "yes":
		t.forwardAgent = os.Getenv("SSH_AUTH_SOCK")
		return nil
	}
	if name, ok := strings.CutPrefix(v, "$"); ok {
		t.forwardAgent = os.Getenv(name)
		return nil
	}
	files, err := t.expandAll([]string{v})
	if err != nil {
		return err
	}
	t.forwardAgent = files[0]
	return nil
}

// forwardAgent asks the node for agent forwarding on sess and serves the
// node's agent channels from the local agent socket. As with OpenSSH, a
// node that refuses is no error: only its orted's own children may miss
// the keys, and they say so when authentication fails.
func forwardAgent(client *ssh.Client, sess *ssh.Session, t *target, log hclog.Logger) {
	if t.forwardAgent == "" {
		return
	}
	if err := agent.ForwardToRemote(client, t.forwardAgent); err != nil {
		log.Debug("agent forwarding", "error", err)
		return
	}
	if err := agent.RequestAgentForwarding(sess); err != nil {
		log.Debug("agent forwarding refused by the node", "error", err)
	}
}
