package launch

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

const sshdPath = "/usr/sbin/sshd"

// lockedBuffer collects sshd's log, written by exec's copying goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startSSHD runs a private OpenSSH sshd on a free loopback port that
// accepts clientKey for any user, and returns its address. It is killed at
// the end of the test.
func startSSHD(t *testing.T, dir string, hostKey ssh.Signer, clientKey ssh.PublicKey) string {
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Skipf("sshd needs /run/sshd: %v", err)
	}
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, ssh.MarshalAuthorizedKey(clientKey), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cfg := fmt.Sprintf(`ListenAddress 127.0.0.1
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
`, port, filepath.Join(dir, "host_key"), auth, filepath.Join(dir, "sshd.pid"))
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	cmd := exec.Command(sshdPath, "-D", "-e", "-f", cfgPath)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // ends when sshd does; the cleanup kills it
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("sshd log:\n%s", log)
		}
	})
	waitListening(t, addr, exited, log)
	return addr
}

// freeAddr returns a loopback address with a port that was free just now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitListening polls until sshd accepts connections.
func waitListening(t *testing.T, addr string, exited <-chan struct{}, log *lockedBuffer) {
	for end := time.Now().Add(hang); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("sshd exited:\n%s", log)
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("sshd not listening on %s within %s:\n%s", addr, hang, log)
}

// TestOpenSSH runs the native client against the real OpenSSH server.
// Skipped without /usr/sbin/sshd; CI installs openssh-server for it.
func TestOpenSSH(t *testing.T) {
	if _, err := os.Stat(sshdPath); err != nil {
		t.Skipf("%s not installed (apt-get install openssh-server)", sshdPath)
	}
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("SSH_AUTH_SOCK", "")
	hostKey := writeKey(t, filepath.Join(dir, "host_key"), "")
	id := filepath.Join(dir, "id_client")
	clientKey := writeKey(t, id, "")
	addr := startSSHD(t, dir, hostKey, clientKey.PublicKey())
	known := filepath.Join(dir, "known_hosts")
	writeKnown(t, known, addr, hostKey.PublicKey())

	host, port, _ := net.SplitHostPort(addr)
	cfg := filepath.Join(dir, "ssh_config")
	body := fmt.Sprintf("Host sshd\n  HostName %s\n  Port %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile none\n",
		host, port, id, known)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewSSH(SSHOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}

	if err := run(t, a, "sshd", "echo", "hello"); err != nil {
		t.Errorf("echo hello: %v", err)
	}
	wantExit(t, run(t, a, "sshd", "sh", "-c", `echo "oops $1" >&2; exit 7`, "sh", "a b"), 7, "oops a b")
	wantExit(t, run(t, a, "sshd", "/x/orted", "--hnp"), 127, "/x/orted")

	// The lifeline: stdin stays open until Close.
	script := `read s; echo "$s" > ` + dir + `/got; cat >/dev/null; echo eof > ` + dir + `/eof`
	p, err := a.Launch(testCtx(t), "sshd", []string{"sh", "-c", script}, []byte("payload\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, filepath.Join(dir, "got")); got != "payload\n" {
		t.Errorf("payload = %q", got)
	}
	assertRunning(t, p, filepath.Join(dir, "eof"))
	if err := closeAndWait(t, p); err != nil {
		t.Errorf("Wait after Close: %v", err)
	}
	waitFile(t, filepath.Join(dir, "eof"))
}
