package agent

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeys checks one target's server host key against its known_hosts
// files, OpenSSH-style.
type hostKeys struct {
	s  *SSH
	t  *target
	db ssh.HostKeyCallback
}

// hostKeyError marks errors of the host key check, which x/crypto wraps in
// "ssh: handshake failed: …"; Start unwraps them, they say it all.
type hostKeyError struct{ error }

func (e hostKeyError) Unwrap() error { return e.error }

// hostKeys reads the target's known_hosts files (those that exist) afresh:
// another launch may have appended to them.
func (s *SSH) hostKeys(t *target) (*hostKeys, error) {
	var files []string
	for _, f := range append(slices.Clone(t.knownHosts), t.globalKnown...) {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	db, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	return &hostKeys{s: s, t: t, db: db}, nil
}

// names are the known_hosts lookup keys: the address actually dialed (the
// knownhosts package writes "[host]:port" for non-22 ports), and the alias
// the user gave, on the same port.
func (h *hostKeys) names() []string {
	names := []string{h.t.addr()}
	if h.t.alias != h.t.hostname {
		names = append(names, net.JoinHostPort(h.t.alias, h.t.port))
	}
	return names
}

// check is the ssh.HostKeyCallback. The key is accepted if known under any
// name; a different key known under any name is a mismatch, whatever
// StrictHostKeyChecking says; an unknown host is up to StrictHostKeyChecking.
func (h *hostKeys) check(_ string, remote net.Addr, key ssh.PublicKey) error {
	want, err := h.known(remote, key)
	switch {
	case err == nil && want == nil:
		return nil
	case err != nil:
		return hostKeyError{fmt.Errorf("ssh: host key for %s: %w", h.t.describe(), err)}
	case len(want) > 0:
		return hostKeyError{fmt.Errorf("ssh: host key mismatch for %s: got %s, known_hosts has %s%s",
			h.t.describe(), ssh.FingerprintSHA256(key), fingerprints(want), h.fix())}
	}
	return h.unknown(key)
}

// known looks key up under every name. It returns (nil, nil) on a match,
// else the keys known for the host (empty, not nil, if none). err is set for
// a revoked key.
func (h *hostKeys) known(remote net.Addr, key ssh.PublicKey) ([]ssh.PublicKey, error) {
	want := []ssh.PublicKey{}
	for _, name := range h.names() {
		err := h.db(name, remote, key)
		var ke *knownhosts.KeyError
		switch {
		case err == nil:
			return nil, nil
		case errors.As(err, &ke):
			for _, k := range ke.Want {
				want = append(want, k.Key)
			}
		default:
			return nil, err
		}
	}
	return want, nil
}

// unknown applies StrictHostKeyChecking to a host not in known_hosts.
func (h *hostKeys) unknown(key ssh.PublicKey) error {
	fp := ssh.FingerprintSHA256(key)
	switch h.t.strict {
	case strictNo:
		h.s.log.Debug("accepting unknown host key", "host", h.t.describe(), "key", fp)
		return nil
	case strictAcceptNew:
		if err := h.remember(key); err != nil {
			// As OpenSSH: failing to remember does not stop the login.
			h.s.log.Warn("cannot add host key to known_hosts", "host", h.t.describe(), "error", err)
		}
		return nil
	}
	return hostKeyError{fmt.Errorf("ssh: host %s not in known_hosts (StrictHostKeyChecking %s): %s",
		h.t.describe(), h.t.strict, fp)}
}

// remember appends the host's key to the first UserKnownHostsFile, under
// the address dialed (hashed if HashKnownHosts). Appends are serialized within the Agent; a
// concurrent launch to the same host may add the same line twice, which is
// harmless.
func (h *hostKeys) remember(key ssh.PublicKey) error {
	if len(h.t.knownHosts) == 0 {
		return errors.New("no UserKnownHostsFile")
	}
	file := h.t.knownHosts[0]
	name := knownhosts.Normalize(h.t.addr())
	if h.t.hashKnown {
		name = knownhosts.HashHostname(name)
	}
	line := knownhosts.Line([]string{name}, key) + "\n"
	h.s.knownMu.Lock()
	defer h.s.knownMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	h.s.log.Info("added host key to known_hosts", "host", h.t.describe(),
		"key", ssh.FingerprintSHA256(key), "file", file)
	return f.Close()
}

// algorithms orders the host key algorithms so that those of the keys
// known for the host come first, as OpenSSH does: otherwise the server may
// present, say, its ed25519 key while known_hosts has its RSA key, and a
// perfectly known host would look like a mismatch.
func (h *hostKeys) algorithms() []string {
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	want, err := h.known(probeAddr{}, probe)
	if err != nil || len(want) == 0 {
		return nil
	}
	supported := ssh.SupportedAlgorithms().HostKeys
	var first []string
	for _, k := range want {
		for _, a := range signatureAlgorithms(k.Type()) {
			if !slices.Contains(first, a) {
				first = append(first, a)
			}
		}
	}
	rest := slices.DeleteFunc(supported, func(a string) bool { return slices.Contains(first, a) })
	return append(first, rest...)
}

// probeAddr stands in for the remote address when probing known_hosts
// before dialing; knownhosts only uses it when the host name is empty.
type probeAddr struct{}

func (probeAddr) Network() string { return "tcp" }
func (probeAddr) String() string  { return "0.0.0.0:0" }

// fingerprints lists the keys' fingerprints, each once: a host known
// under its name and its address has the same key twice.
func fingerprints(keys []ssh.PublicKey) string {
	var fps []string
	for _, k := range keys {
		if fp := ssh.FingerprintSHA256(k); !slices.Contains(fps, fp) {
			fps = append(fps, fp)
		}
	}
	return strings.Join(fps, ", ")
}

// fix says how to forget the old key, if the node's key changed on
// purpose (a reinstalled node).
func (h *hostKeys) fix() string {
	if len(h.t.knownHosts) == 0 {
		return ""
	}
	return fmt.Sprintf("; if the node's key changed on purpose: ssh-keygen -R '%s' -f %s",
		knownhosts.Normalize(h.t.addr()), h.t.knownHosts[0])
}
