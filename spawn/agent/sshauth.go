package agent

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// defaultIdentities are tried when the config names no IdentityFile, in
// OpenSSH's order.
var defaultIdentities = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// keyring is the signers for one handshake: the agent's first (unless
// IdentitiesOnly), then the identity files, without duplicates. The agent
// connection lives as long as the handshake; close releases it.
type keyring struct {
	signers []ssh.Signer
	agent   io.Closer
}

// keys collects the signers for t.
func (s *SSH) keys(t *target) *keyring {
	k := &keyring{}
	if !t.identitiesOnly {
		k.addAgent(s, t)
	}
	files := t.identityFiles
	if files == nil {
		files = defaultIdentityFiles()
	}
	for _, f := range files {
		if sg := s.fileSigner(f, t.identityFiles != nil); sg != nil {
			k.add(sg)
		}
	}
	return k
}

// defaultIdentityFiles returns ~/.ssh/id_* in preference order.
func defaultIdentityFiles() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	out := make([]string, len(defaultIdentities))
	for i, n := range defaultIdentities {
		out[i] = filepath.Join(home, ".ssh", n)
	}
	return out
}

// addAgent adds the keys of the ssh-agent at SSH_AUTH_SOCK (or
// IdentityAgent), if any. An unreachable agent is not an error: the files
// may still do.
func (k *keyring) addAgent(s *SSH, t *target) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if t.agentSocket != nil {
		sock = *t.agentSocket
	}
	if sock == "" {
		return
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		s.log.Debug("ssh-agent unreachable", "socket", sock, "error", err)
		return
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		s.log.Debug("ssh-agent keys", "error", err)
		conn.Close()
		return
	}
	k.agent = conn
	for _, sg := range signers {
		k.add(sg)
	}
}

// add appends sg unless a signer for the same key is there already (the
// agent often holds the key of an identity file).
func (k *keyring) add(sg ssh.Signer) {
	pub := string(sg.PublicKey().Marshal())
	for _, have := range k.signers {
		if string(have.PublicKey().Marshal()) == pub {
			return
		}
	}
	k.signers = append(k.signers, sg)
}

// close releases the agent connection.
func (k *keyring) close() {
	if k.agent != nil {
		k.agent.Close()
	}
}

// fileSigner returns the signer of an identity file, parsing each file once
// per Agent (a launch tree makes many connections with the same keys).
// Unusable files are skipped with a log line: a missing default key is
// normal, a missing configured one is worth a warning, an encrypted one
// cannot be used without a prompt.
func (s *SSH) fileSigner(path string, configured bool) ssh.Signer {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if sg, ok := s.keyCache[path]; ok {
		return sg // nil for an unusable file
	}
	sg, err := parseKeyFile(path)
	var pme *ssh.PassphraseMissingError
	switch {
	case err == nil:
	case errors.As(err, &pme):
		s.log.Debug("skipping encrypted identity file", "file", path)
	case errors.Is(err, os.ErrNotExist) && !configured:
	case errors.Is(err, os.ErrNotExist):
		s.log.Warn("identity file not found", "file", path)
	default:
		s.log.Warn("skipping identity file", "file", path, "error", err)
	}
	s.keyCache[path] = sg
	return sg
}

func parseKeyFile(path string) (ssh.Signer, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ssh.ParsePrivateKey(pem)
}
