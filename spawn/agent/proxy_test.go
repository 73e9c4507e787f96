package agent

import (
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"

	"prsh/internal/sshdtest"
)

// tcpProxy is a ProxyCommand that joins its stdin and stdout to %h:%p
// with bash's /dev/tcp, writing its pid to pidFile first.
func tcpProxy(pidFile string) string {
	return `ProxyCommand bash -c 'echo $$ > ` + pidFile + `; exec 3<>/dev/tcp/%h/%p; cat <&3 & exec cat >&3'`
}

// TestSSHProxyCommand: the command is the connection, and it is killed and
// reaped when the session ends.
func TestSSHProxyCommand(t *testing.T) {
	e := newSSHEnv(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	a := e.agent("Host via\n  HostName 127.0.0.1\n  "+tcpProxy(pidFile), SSHOptions{})
	if err := run(t, a, "via", "echo", "hello"); err != nil {
		t.Fatalf("echo hello: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	// Reaped: not even a zombie is left (its pid cannot have been reused
	// so soon on a machine that hands pids out in order).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("ProxyCommand %d still there after the session: kill 0: %v", pid, err)
	}
}

// TestSSHProxyCommandFails: a failing command is named with its status and
// stderr; nothing connects around it.
func TestSSHProxyCommandFails(t *testing.T) {
	e := newSSHEnv(t)
	a := e.agent("Host via\n  HostName 127.0.0.1\n  ProxyCommand sh -c 'echo cannot >&2; exit 4'", SSHOptions{})
	_, err := a.Start(testCtx(t), "via", []string{"true"}, nil)
	if want := "ssh: ProxyCommand sh -c 'echo cannot >&2; exit 4': exit status 4: cannot"; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	var xe *ExitError
	if errors.As(err, &xe) {
		t.Error("the ProxyCommand's exit must not read as the remote command's")
	}
	a = e.agent("Host via\n  HostName 127.0.0.1\n  ProxyCommand false", SSHOptions{})
	_, err = a.Start(testCtx(t), "via", []string{"true"}, nil)
	wantErr(t, err, "ssh: ProxyCommand false: exit status 1")
}

// TestSSHProxyJump: through OpenSSH's sshd as the jump host, with its own
// user, key, port and known_hosts, to the test server; a target the jump
// host cannot reach is named as such.
func TestSSHProxyJump(t *testing.T) {
	e := newSSHEnv(t)
	gw := sshdtest.Start(t)
	gwConfig, err := os.ReadFile(gw.WriteConfig(t, "gw"))
	if err != nil {
		t.Fatal(err)
	}
	closed := refusingPort(t)
	a := e.agent("Host target\n  HostName 127.0.0.1\n  ProxyJump gw\n"+
		"Host closed\n  HostName 127.0.0.1\n  Port "+closed+"\n  ProxyJump gw\n"+
		"Host twice\n  HostName 127.0.0.1\n  ProxyJump gw,gw\n"+string(gwConfig), SSHOptions{})
	if err := run(t, a, "target", "echo", "hello"); err != nil {
		t.Fatalf("echo hello through gw: %v", err)
	}
	if n := strings.Count(gw.Log(), "Accepted publickey"); n != 1 {
		t.Errorf("%d logins to the jump host, want 1", n)
	}
	if err := run(t, a, "twice", "true"); err != nil {
		t.Fatalf("through gw twice: %v", err)
	}
	_, err = a.Start(testCtx(t), "closed", []string{"true"}, nil)
	wantErr(t, err, "ssh: jump host gw cannot reach "+net.JoinHostPort("127.0.0.1", closed)+": ", "onnect")
}

// TestSSHProxyJumpLoop: a jump host whose own config sends it through
// itself is stopped before anything starts.
func TestSSHProxyJumpLoop(t *testing.T) {
	a, _ := agentWithConfig(t, "Host gw\n  ProxyJump gw\nHost t\n  ProxyJump gw\n", SSHOptions{})
	err := a.CheckHosts([]string{"t"})
	wantErr(t, err, "more than 8 jump hosts on the way to gw")
	a, _ = agentWithConfig(t, "Host t\n  ProxyJump gw:x\n", SSHOptions{})
	wantErr(t, a.CheckHosts([]string{"t"}), `ProxyJump (`, `"gw:x": bad port`)
}

// TestSSHCertAuthority: a host known only by a @cert-authority line is
// accepted when it presents a certificate that authority signed for it,
// and refused once the authority is @revoked: x/crypto's knownhosts does both,
// and the default host key algorithms ask for certificates first.
func TestSSHCertAuthority(t *testing.T) {
	e := newSSHEnv(t)
	ca := newKey(t)
	cert := &ssh.Certificate{
		Key: e.srv.hostKey.PublicKey(), CertType: ssh.HostCert, KeyId: "test",
		ValidPrincipals: []string{"127.0.0.1"}, ValidBefore: ssh.CertTimeInfinity,
	}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	certSigner, err := ssh.NewCertSigner(cert, e.srv.hostKey)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.set(func(s *testServer) { s.hostKey = certSigner })
	kh := filepath.Join(e.home, "ca_known_hosts")
	line := "@cert-authority [127.0.0.1]:" + e.srv.port + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ca.PublicKey()))) + "\n"
	if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	a := e.agent("Host 127.0.0.1\n  UserKnownHostsFile "+kh, SSHOptions{})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("host certificate signed by a known authority: %v", err)
	}

	revoked := "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(ca.PublicKey()))) + "\n"
	if err := os.WriteFile(kh, []byte(revoked+line), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	wantErr(t, err, "revoked")
}
