package testbed

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"prsh/testbed/agent"
)

// keys are generated afresh for every cluster, so that nothing depends on
// the user's ~/.ssh and parallel clusters cannot accept each other's keys.
type keys struct {
	host      ssh.Signer // in known_hosts
	wrongHost ssh.Signer // for nodes with Fault.WrongHostKey
	client    ed25519.PrivateKey
	clientPub ssh.PublicKey
}

func newKeys() (*keys, error) {
	host, err := newSigner()
	if err != nil {
		return nil, err
	}
	wrong, err := newSigner()
	if err != nil {
		return nil, err
	}
	_, client, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testbed: client key: %w", err)
	}
	pub, err := ssh.NewPublicKey(client.Public())
	if err != nil {
		return nil, fmt.Errorf("testbed: client key: %w", err)
	}
	return &keys{host: host, wrongHost: wrong, client: client, clientPub: pub}, nil
}

func newSigner() (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testbed: host key: %w", err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("testbed: host key: %w", err)
	}
	return s, nil
}

// writeFiles writes everything a client needs into the cluster's dir.
func writeFiles(c *Cluster, k *keys) error {
	priv, err := ssh.MarshalPrivateKey(k.client, "prsh-testbed")
	if err != nil {
		return fmt.Errorf("testbed: marshal client key: %w", err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k.clientPub))) + " prsh-testbed\n"
	files := []struct {
		path string
		data []byte
	}{
		{c.IdentityPath(), pem.EncodeToMemory(priv)},
		{c.IdentityPath() + ".pub", []byte(pub)},
		{c.KnownHostsPath(), knownHosts(c.nodes, k.host.PublicKey())},
		{c.SSHConfigPath(), sshConfig(c)},
		{c.HostfilePath(), hostfile(c)},
	}
	for _, f := range files {
		if err := writeFile(f.path, f.data); err != nil {
			return err
		}
	}
	return writeAgentConfig(c)
}

// writeAgentConfig writes what testbed-agent needs, and the directory of
// its spawners' locks.
func writeAgentConfig(c *Cluster) error {
	locks := filepath.Join(c.dir, "agent-locks")
	if err := os.MkdirAll(locks, 0o700); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	cfg := agent.Config{
		Block: c.block, Nodes: c.cfg.Nodes, User: c.user, RunID: c.runID,
		Latency: c.cfg.SSHLatency, SpawnCost: c.cfg.SpawnCost, UTS: c.cfg.UTS,
		Locks: locks, Env: c.cfg.Env,
	}
	if err := cfg.Write(c.AgentConfigPath()); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	return nil
}

// writeFile writes with mode 0600 even over an existing file, because
// OpenSSH refuses private keys that others can read.
func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	return nil
}

func hostfile(c *Cluster) []byte {
	slots := c.cfg.Slots
	if slots == 0 {
		slots = 1
	}
	var b bytes.Buffer
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "%s slots=%d\n", n.Name, slots)
	}
	return b.Bytes()
}

// knownHosts lists every node under both its address and its name, so the
// client may connect by either (OpenSSH's CheckHostIP looks up both).
func knownHosts(nodes []*node, key ssh.PublicKey) []byte {
	var b bytes.Buffer
	for _, n := range nodes {
		port := strconv.Itoa(n.Port)
		addrs := []string{
			knownhosts.Normalize(net.JoinHostPort(n.Addr, port)),
			knownhosts.Normalize(net.JoinHostPort(n.Name, port)),
		}
		b.WriteString(knownhosts.Line(addrs, key))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// sshConfig names each node's address and port, then gives every node the
// same settings in one block. Kept compact because every orted parses it:
// with a block per node the parsing grew to a third of a daemon's CPU at
// 256 nodes.
func sshConfig(c *Cluster) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# prsh testbed, run %s: use with ssh -F %s\n", c.runID, quoteConfig(c.SSHConfigPath()))
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "Host %s\n  HostName %s\n  Port %d\n", n.Name, n.Addr, n.Port)
	}
	fmt.Fprintf(&b, "\nHost %s\n", nodePattern)
	fmt.Fprintf(&b, "  User %s\n", c.user)
	fmt.Fprintf(&b, "  IdentityFile %s\n", quoteConfig(c.IdentityPath()))
	fmt.Fprintf(&b, "  IdentitiesOnly yes\n")
	fmt.Fprintf(&b, "  UserKnownHostsFile %s\n", quoteConfig(c.KnownHostsPath()))
	fmt.Fprintf(&b, "  GlobalKnownHostsFile /dev/null\n")
	fmt.Fprintf(&b, "  StrictHostKeyChecking yes\n")
	fmt.Fprintf(&b, "  BatchMode yes\n")
	fmt.Fprintf(&b, "  LogLevel ERROR\n")
	return b.Bytes()
}

// nodePattern matches every node name (nodes.Name) in an ssh_config Host line.
const nodePattern = "node*"

// quoteConfig quotes a path for ssh_config only when it must, since some
// parsers handle quotes poorly.
func quoteConfig(s string) string {
	if strings.ContainsAny(s, " \t\"") {
		return strconv.Quote(s)
	}
	return s
}
