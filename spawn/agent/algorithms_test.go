package agent

import (
	"crypto/rand"
	"crypto/rsa"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/crypto/ssh"

	"prsh/internal/sshdtest"
)

func TestApplyAlgorithmList(t *testing.T) {
	def := []string{"a1", "a2", "b1"}
	known := []string{"a1", "a2", "b1", "old"}
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"b1,a1", []string{"b1", "a1"}},
		{"a*", []string{"a1", "a2"}},
		{"+old", []string{"a1", "a2", "b1", "old"}},
		{"-a*", []string{"b1"}},
		{"^b1,old", []string{"b1", "old", "a1", "a2"}},
		{"unknown,a2", []string{"a2"}},
		{"unknown", nil},
		{"-*", []string{}},
	} {
		if got := applyAlgorithmList(tc.value, def, known); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.value, got, tc.want)
		}
	}
}

// TestSSHAlgorithmLists: the config's algorithm lists narrow what the
// client offers: a list the server shares connects, one it does not
// fails the handshake; a list the client knows nothing of is refused
// with its file and line.
func TestSSHAlgorithmLists(t *testing.T) {
	e := newSSHEnv(t)
	e.srv.set(func(s *testServer) {
		s.tweak = func(c *ssh.ServerConfig) { c.Ciphers = []string{"aes128-ctr"} }
	})
	for _, ok := range []string{"Ciphers aes*-ctr", "Ciphers +aes128-ctr", "MACs ^hmac-sha2-512", "KexAlgorithms curve25519-sha256"} {
		if err := run(t, e.agent("Host *\n  "+ok, SSHOptions{}), "127.0.0.1", "true"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"Ciphers chacha20-poly1305@openssh.com", "Ciphers -aes128-ctr"} {
		_, err := e.agent("Host *\n  "+bad, SSHOptions{}).Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
		wantErr(t, err, "no common algorithm")
	}
	_, err := e.agent("Host *\n  KexAlgorithms sntrup-only-here", SSHOptions{}).Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	wantErr(t, err, ":2: KexAlgorithms sntrup-only-here", "knows none of these algorithms")
}

// TestSSHRequiredRSASize: an RSA host key under RequiredRSASize is refused.
func TestSSHRequiredRSASize(t *testing.T) {
	e := newSSHEnv(t)
	rk, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := ssh.NewSignerFromKey(rk)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.set(func(s *testServer) { s.hostKey = hostKey })
	sshdtest.WriteKnown(t, e.known, e.srv.addr, hostKey.PublicKey())
	if err := run(t, e.agent("", SSHOptions{}), "127.0.0.1", "true"); err != nil {
		t.Errorf("a 1024-bit RSA host key without RequiredRSASize: %v", err)
	}
	_, err = e.agent("Host *\n  RequiredRSASize 2048", SSHOptions{}).Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	wantErr(t, err, "RSA key has 1024 bits, under RequiredRSASize 2048")
}

// TestSSHCryptoPolicy: a system file as RHEL ships it (its crypto policy
// included from a "Match final all" block) is honoured, not refused.
func TestSSHCryptoPolicy(t *testing.T) {
	e := newSSHEnv(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "openssh.config")
	if err := os.WriteFile(policy, []byte(`Ciphers aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes256-ctr,aes128-gcm@openssh.com,aes128-ctr
MACs hmac-sha2-256-etm@openssh.com,hmac-sha1-etm@openssh.com,umac-128-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256,hmac-sha1,umac-128@openssh.com,hmac-sha2-512
GSSAPIKexAlgorithms gss-curve25519-sha256-,gss-nistp256-sha256-,gss-group14-sha256-,gss-group16-sha512-
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group-exchange-sha256,diffie-hellman-group14-sha256,diffie-hellman-group16-sha512,diffie-hellman-group18-sha512
PubkeyAcceptedAlgorithms ecdsa-sha2-nistp256,ecdsa-sha2-nistp256-cert-v01@openssh.com,ssh-ed25519,ssh-ed25519-cert-v01@openssh.com,rsa-sha2-256,rsa-sha2-256-cert-v01@openssh.com,rsa-sha2-512,rsa-sha2-512-cert-v01@openssh.com
HostbasedAcceptedAlgorithms ecdsa-sha2-nistp256,ssh-ed25519,rsa-sha2-256,rsa-sha2-512
HostKeyAlgorithms ecdsa-sha2-nistp256,ecdsa-sha2-nistp256-cert-v01@openssh.com,ssh-ed25519,ssh-ed25519-cert-v01@openssh.com,rsa-sha2-256,rsa-sha2-512
CASignatureAlgorithms ecdsa-sha2-nistp256,ssh-ed25519,rsa-sha2-256,rsa-sha2-512
RequiredRSASize 2048
`), 0o644); err != nil {
		t.Fatal(err)
	}
	system := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(system, []byte("Host *\n  GSSAPIAuthentication yes\n\nMatch final all\n  Include "+policy+"\n  ForwardX11Trusted yes\n  SendEnv LANG LC_CTYPE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t, e.agent("", SSHOptions{SystemConfigFile: system}), "127.0.0.1", "true"); err != nil {
		t.Errorf("RHEL's system file: %v", err)
	}
}

// TestSSHForwardAgent: with ForwardAgent yes the node can use the user's
// agent (as its orted does to reach its own children); without it, not.
func TestSSHForwardAgent(t *testing.T) {
	e := newSSHEnv(t)
	authKey := serveAgent(t, e.home)
	e.srv.set(func(s *testServer) { s.authKey = authKey })
	if err := run(t, e.agent("", SSHOptions{}), "127.0.0.1", "true"); err != nil {
		t.Fatal(err)
	}
	if err := run(t, e.agent("Host *\n  ForwardAgent yes", SSHOptions{}), "127.0.0.1", "true"); err != nil {
		t.Fatal(err)
	}
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	if !reflect.DeepEqual(e.srv.agentKeys, []int{1}) {
		t.Errorf("keys the node saw through forwarded agents: %v, want [1] (one forwarding, one key)", e.srv.agentKeys)
	}
}
