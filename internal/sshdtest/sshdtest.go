// Package sshdtest is a test helper: it runs a private OpenSSH sshd on a
// free loopback port, with a fresh host key and a client key it accepts, so
// that tests can drive real ssh sessions without touching the user's keys
// or the system's sshd.
package sshdtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHDPath is where Debian's openssh-server installs sshd.
const SSHDPath = "/usr/sbin/sshd"

// hang bounds the wait for sshd to listen.
const hang = 30 * time.Second

// Server is a private OpenSSH sshd on a free loopback port, killed at the
// end of the test that started it. It accepts ClientKey for any user.
type Server struct {
	Addr, Host, Port string
	Dir              string     // the server's files: keys, sshd_config, known_hosts
	ClientKey        string     // private key file the server accepts
	KnownHosts       string     // known_hosts file with the host key for Addr
	HostKey          ssh.Signer // the server's host key
}

// Start starts a Server, or skips the test when sshd is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := os.Stat(SSHDPath); err != nil {
		t.Skipf("%s not installed (apt-get install openssh-server)", SSHDPath)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // privilege separation directory
		t.Skipf("sshd needs /run/sshd: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Dir: dir, ClientKey: filepath.Join(dir, "id_client"), KnownHosts: filepath.Join(dir, "known_hosts")}
	hostKeyFile := filepath.Join(dir, "host_key")
	s.HostKey = WriteKey(t, hostKeyFile, "")
	clientKey := WriteKey(t, s.ClientKey, "")
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, ssh.MarshalAuthorizedKey(clientKey.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Addr = freeAddr(t)
	s.Host, s.Port, _ = net.SplitHostPort(s.Addr)
	WriteKnown(t, s.KnownHosts, s.Addr, s.HostKey.PublicKey())

	cfg := fmt.Sprintf(`ListenAddress %s
Port %s
HostKey %s
AuthorizedKeysFile %s
PidFile %s
UsePAM no
StrictModes no
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel VERBOSE
`, s.Host, s.Port, hostKeyFile, auth, filepath.Join(dir, "sshd.pid"))
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd writes its log straight to a file: no copying goroutine.
	logFile, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // sshd has its own copy
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // ends when sshd does; the cleanup kills it
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("sshd log:\n%s", s.Log())
		}
	})
	waitListening(t, s.Addr, exited, s.Log)
	return s
}

// Log returns what sshd has logged so far (LogLevel VERBOSE). It is
// logged by the test's cleanup too, when the test failed.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	return string(b)
}

// WriteConfig writes an OpenSSH client config in which every alias reaches
// the server as the current user with ClientKey, checking the host key
// against KnownHosts only, and returns the file's path.
func (s *Server) WriteConfig(t testing.TB, aliases ...string) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, a := range aliases {
		fmt.Fprintf(&b, "Host %s\n  HostName %s\n  Port %s\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
			"  UserKnownHostsFile %s\n  GlobalKnownHostsFile none\n  StrictHostKeyChecking yes\n",
			a, s.Host, s.Port, u.Username, s.ClientKey, s.KnownHosts)
	}
	f, err := os.CreateTemp(s.Dir, "ssh_config-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// WriteKey writes a new ed25519 private key in OpenSSH format to path
// (encrypted if passphrase is set) and returns its signer.
func WriteKey(t testing.TB, path, passphrase string) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// WriteKnown appends a known_hosts line for addr.
func WriteKnown(t testing.TB, file, addr string, key ssh.PublicKey) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, knownhosts.Line([]string{knownhosts.Normalize(addr)}, key)); err != nil {
		t.Fatal(err)
	}
}

// freeAddr returns a loopback address with a port that was free just now.
// The address is a random one in 127.255/16, which no other listener uses
// (the testbed's nodes stop at 127.254): between this check and sshd's
// bind, no daemon listening on an ephemeral port can take it.
func freeAddr(t testing.TB) string {
	t.Helper()
	ip := fmt.Sprintf("127.255.%d.%d", 1+mrand.IntN(250), 1+mrand.IntN(250))
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitListening polls until sshd accepts connections.
func waitListening(t testing.TB, addr string, exited <-chan struct{}, log func() string) {
	t.Helper()
	for end := time.Now().Add(hang); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("sshd exited:\n%s", log())
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("sshd not listening on %s within %s:\n%s", addr, hang, log())
}
