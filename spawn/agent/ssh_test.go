package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"prsh/internal/sshdtest"
)

// sshEnv is a test server plus a client side confined to a temporary HOME:
// a key the server accepts and a known_hosts file that knows the server.
type sshEnv struct {
	t     *testing.T
	home  string
	srv   *testServer
	id    string // identity file the server accepts
	known string // known_hosts with the server's key
}

func newSSHEnv(t *testing.T) *sshEnv {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	e := &sshEnv{t: t, home: home, id: filepath.Join(home, "id_test"), known: filepath.Join(home, "known_hosts")}
	key := sshdtest.WriteKey(t, e.id, "")
	e.srv = startTestServer(t, key.PublicKey())
	sshdtest.WriteKnown(t, e.known, e.srv.addr, e.srv.hostKey.PublicKey())
	return e
}

// base is the catch-all config block; host blocks go before it, since the
// first value found wins.
func (e *sshEnv) base() string {
	return fmt.Sprintf("Host *\n  Port %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile none\n",
		e.srv.port, e.id, e.known)
}

// agent writes config (host blocks, then base) and returns an SSH agent
// using it.
func (e *sshEnv) agent(config string, opts SSHOptions) *SSH {
	e.t.Helper()
	opts.ConfigFile = filepath.Join(e.t.TempDir(), "ssh_config")
	if opts.SystemConfigFile == "" {
		opts.SystemConfigFile = "none" // not this machine's
	}
	if err := os.WriteFile(opts.ConfigFile, []byte(config+"\n"+e.base()), 0o600); err != nil {
		e.t.Fatal(err)
	}
	a, err := NewSSH(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// run launches argv on host and returns Wait's result.
func run(t *testing.T, a Agent, host string, argv ...string) error {
	t.Helper()
	p, err := a.Start(testCtx(t), host, argv, nil)
	if err != nil {
		t.Fatalf("Launch %s: %v", host, err)
	}
	defer p.Close()
	return waitFor(t, p)
}

func TestSSHRun(t *testing.T) {
	e := newSSHEnv(t)
	a := e.agent("", SSHOptions{})
	if err := run(t, a, "127.0.0.1", "echo", "hello"); err != nil {
		t.Errorf("echo hello: %v", err)
	}
	err := run(t, a, "127.0.0.1", "sh", "-c", `echo "oops $1" >&2; exit 3`, "sh", "a  'b'")
	wantExit(t, err, 3, "oops a  'b'")
	err = run(t, a, "127.0.0.1", "/x/orted", "--daemonize")
	wantExit(t, err, 127, "/x/orted: not found")
	// exec, or the server's shell reports 143 as a plain exit status.
	xe := wantExit(t, run(t, a, "127.0.0.1", "exec", "sh", "-c", "kill -TERM $$"), 128+15, "")
	if xe.Signal != "TERM" {
		t.Errorf("signal %q, want TERM", xe.Signal)
	}
}

// TestSSHLifeline: the payload arrives, stdin stays open, Close closes it.
func TestSSHLifeline(t *testing.T) {
	e := newSSHEnv(t)
	a := e.agent("", SSHOptions{})
	p := checkLifeline(t, a, "127.0.0.1")
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSSHUnknownHostStrict(t *testing.T) {
	e := newSSHEnv(t)
	empty := filepath.Join(e.home, "empty_known_hosts")
	fp := ssh.FingerprintSHA256(e.srv.hostKey.PublicKey())
	for _, mode := range []string{"", "StrictHostKeyChecking yes", "StrictHostKeyChecking ask"} {
		a := e.agent("Host 127.0.0.1\n  UserKnownHostsFile "+empty+"\n  "+mode, SSHOptions{})
		_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
		want := fmt.Sprintf("ssh: host 127.0.0.1:%s not in known_hosts (StrictHostKeyChecking yes): %s", e.srv.port, fp)
		if err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %s", mode, err, want)
		}
	}
	if _, err := os.Stat(empty); err == nil {
		t.Error("strict checking wrote known_hosts")
	}
}

func TestSSHAcceptNew(t *testing.T) {
	e := newSSHEnv(t)
	kh := filepath.Join(e.home, "sub", "known_hosts")
	a := e.agent("Host 127.0.0.1\n  UserKnownHostsFile "+kh+"\n  StrictHostKeyChecking accept-new", SSHOptions{})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Fatalf("accept-new: %v", err)
	}
	b, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	want := knownhosts.Line([]string{"[127.0.0.1]:" + e.srv.port}, e.srv.hostKey.PublicKey()) + "\n"
	if string(b) != want {
		t.Errorf("known_hosts = %q, want %q", b, want)
	}
	strict := e.agent("Host 127.0.0.1\n  UserKnownHostsFile "+kh+"\n  StrictHostKeyChecking yes", SSHOptions{})
	if err := run(t, strict, "127.0.0.1", "true"); err != nil {
		t.Errorf("after accept-new, strict: %v", err)
	}
}

func TestSSHAcceptNewHashed(t *testing.T) {
	e := newSSHEnv(t)
	kh := filepath.Join(e.home, "hashed_known_hosts")
	cfg := "Host 127.0.0.1\n  UserKnownHostsFile " + kh + "\n  HashKnownHosts yes\n  StrictHostKeyChecking "
	if err := run(t, e.agent(cfg+"accept-new", SSHOptions{}), "127.0.0.1", "true"); err != nil {
		t.Fatalf("accept-new: %v", err)
	}
	if b, _ := os.ReadFile(kh); !strings.HasPrefix(string(b), "|1|") || strings.Contains(string(b), "127.0.0.1") {
		t.Errorf("known_hosts = %q, want a hashed name", b)
	}
	if err := run(t, e.agent(cfg+"yes", SSHOptions{}), "127.0.0.1", "true"); err != nil {
		t.Errorf("after accept-new, strict: %v", err)
	}
}

func TestSSHStrictNo(t *testing.T) {
	e := newSSHEnv(t)
	kh := filepath.Join(e.home, "none_known_hosts")
	a := e.agent("Host 127.0.0.1\n  UserKnownHostsFile "+kh+"\n  StrictHostKeyChecking no", SSHOptions{})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Fatalf("StrictHostKeyChecking no: %v", err)
	}
	if _, err := os.Stat(kh); err == nil {
		t.Error("StrictHostKeyChecking no wrote known_hosts")
	}
}

// TestSSHHostKeyMismatch: a known host with another key is refused whatever
// StrictHostKeyChecking says, and the error shows both fingerprints.
func TestSSHHostKeyMismatch(t *testing.T) {
	e := newSSHEnv(t)
	kh := filepath.Join(e.home, "other_known_hosts")
	other := newKey(t).PublicKey()
	sshdtest.WriteKnown(t, kh, e.srv.addr, other)
	want := fmt.Sprintf("ssh: host key mismatch for 127.0.0.1:%s: got %s, known_hosts has %s; if the node's key changed on purpose: ssh-keygen -R '[127.0.0.1]:%s' -f %s",
		e.srv.port, ssh.FingerprintSHA256(e.srv.hostKey.PublicKey()), ssh.FingerprintSHA256(other), e.srv.port, kh)
	for _, mode := range []string{"yes", "accept-new", "no"} {
		a := e.agent("Host 127.0.0.1\n  UserKnownHostsFile "+kh+"\n  StrictHostKeyChecking "+mode, SSHOptions{})
		_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v\nwant %s", mode, err, want)
		}
	}
}

// TestSSHAliasInKnownHosts: known_hosts may name the host by its alias
// rather than by the HostName dialed; a mismatch names both.
func TestSSHAliasInKnownHosts(t *testing.T) {
	e := newSSHEnv(t)
	kh := filepath.Join(e.home, "alias_known_hosts")
	sshdtest.WriteKnown(t, kh, net.JoinHostPort("node1", e.srv.port), e.srv.hostKey.PublicKey())
	kh2 := filepath.Join(e.home, "alias_known_hosts2")
	sshdtest.WriteKnown(t, kh2, net.JoinHostPort("node2", e.srv.port), newKey(t).PublicKey())
	a := e.agent("Host node1\n  HostName 127.0.0.1\n  UserKnownHostsFile "+kh+
		"\nHost node2\n  HostName 127.0.0.1\n  UserKnownHostsFile "+kh2, SSHOptions{})
	if err := run(t, a, "node1", "true"); err != nil {
		t.Errorf("alias in known_hosts: %v", err)
	}
	_, err := a.Start(testCtx(t), "node2", []string{"true"}, nil)
	wantErr(t, err, "ssh: host key mismatch for node2 (127.0.0.1:"+e.srv.port+"): got ")
}

// silentListener accepts TCP connections and never says a word.
func silentListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() { // ends when the cleanup closes the listener
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func TestSSHHandshakeTimeout(t *testing.T) {
	e := newSSHEnv(t)
	port := silentListener(t)
	a := e.agent("Host silent\n  HostName 127.0.0.1\n  Port "+port, SSHOptions{ConnectTimeout: time.Second})
	_, err := a.Start(testCtx(t), "silent", []string{"true"}, nil)
	if err == nil || err.Error() != "ssh: handshake timed out after 1s" {
		t.Errorf("got %v", err)
	}
	// The same from the config's ConnectTimeout, which wins over the option.
	a = e.agent("Host silent\n  HostName 127.0.0.1\n  Port "+port+"\n  ConnectTimeout 1", SSHOptions{ConnectTimeout: time.Hour})
	_, err = a.Start(testCtx(t), "silent", []string{"true"}, nil)
	if err == nil || err.Error() != "ssh: handshake timed out after 1s" {
		t.Errorf("config ConnectTimeout: got %v", err)
	}
}

// TestSSHSlowHandshake: a server that takes longer than ConnectTimeout in
// all, but never stays silent that long, is slow, not failed.
func TestSSHSlowHandshake(t *testing.T) {
	e := newSSHEnv(t)
	e.srv.set(func(s *testServer) { s.trickle = 500 * time.Millisecond })
	a := e.agent("", SSHOptions{ConnectTimeout: 2 * time.Second})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("slow handshake: %v", err)
	}
}

// TestSSHSlowCommandStart: a server that takes longer than ConnectTimeout
// to start the command but keeps talking meanwhile is slow, not failed;
// one that stays silent as long fails, naming the step.
func TestSSHSlowCommandStart(t *testing.T) {
	e := newSSHEnv(t)
	e.srv.set(func(s *testServer) { s.execDelay, s.execPings = 2500*time.Millisecond, 200*time.Millisecond })
	a := e.agent("", SSHOptions{ConnectTimeout: time.Second})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("slow command start: %v", err)
	}
	e.srv.set(func(s *testServer) { s.execPings = 0 })
	_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	if err == nil || err.Error() != "ssh: starting the command timed out after 1s" {
		t.Errorf("silent command start: got %v, want the start timed out after 1s", err)
	}
}

// TestConnGuardUnreadIsProgress: bytes the server sent that wait unread in
// this side's socket (this side's reader did not run, as on a loaded
// machine) are progress; a silent server is not.
func TestConnGuardUnreadIsProgress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sends bool
	}{{"unread", true}, {"silent", false}} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tcpPair(t)
			if tc.sends {
				server.Write([]byte("x"))
			}
			g := guardConn(context.Background(), client, 100*time.Millisecond)
			time.Sleep(350 * time.Millisecond) // three timeouts, nothing read
			if alive := g.release(); alive != tc.sends {
				t.Errorf("connection alive %v after three timeouts, want %v", alive, tc.sends)
			}
		})
	}
}

// tcpPair is both ends of a loopback TCP connection, closed when the test
// ends.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestSSHDroppedRetried: connections the server closes at accept (as sshd
// past MaxStartups) are tried again; after dropTries drops Launch fails
// saying so.
func TestSSHDroppedRetried(t *testing.T) {
	e := newSSHEnv(t)
	e.srv.set(func(s *testServer) { s.dropFirst = dropTries - 1 })
	a := e.agent("", SSHOptions{})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("after %d drops: %v", dropTries-1, err)
	}
	e.srv.set(func(s *testServer) { s.dropFirst += dropTries })
	_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	wantErr(t, err, fmt.Sprintf("ssh: connection dropped during the handshake %d times", dropTries), "MaxStartups")
	e.srv.set(func(s *testServer) {
		if s.dropped != 2*dropTries-1 {
			t.Errorf("server dropped %d connections, want %d", s.dropped, 2*dropTries-1)
		}
	})
}

// TestSSHAuthFailureNotRetried: only drops before authentication are
// tried again.
func TestSSHAuthFailureNotRetried(t *testing.T) {
	e := newSSHEnv(t)
	e.srv.set(func(s *testServer) { s.authKey = newKey(t).PublicKey() })
	a := e.agent("", SSHOptions{})
	_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	wantErr(t, err, "ssh: authentication failed")
	e.srv.set(func(s *testServer) {
		if n := len(s.conns); n != 1 {
			t.Errorf("%d connections, want 1", n)
		}
	})
}

func TestSSHContextCancel(t *testing.T) {
	e := newSSHEnv(t)
	port := silentListener(t)
	a := e.agent("Host silent\n  HostName 127.0.0.1\n  Port "+port, SSHOptions{ConnectTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := a.Start(ctx, "silent", []string{"true"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want DeadlineExceeded", err)
	}
}

func TestSSHRefused(t *testing.T) {
	e := newSSHEnv(t)
	port := refusingPort(t)
	addr := net.JoinHostPort("127.0.0.1", port)
	a := e.agent("Host closed\n  HostName 127.0.0.1\n  Port "+port, SSHOptions{})
	_, err := a.Start(testCtx(t), "closed", []string{"true"}, nil)
	if want := "ssh: dial tcp " + addr + ": connect: connection refused"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// refusingPort returns a port of 127.0.0.1 held by a socket that is bound
// but not listening: connecting is refused, and no other socket (another
// test's listener) can take the port until the test ends, as it could if
// the port were merely found free and released.
func refusingPort(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
}

func TestSSHLookupError(t *testing.T) {
	e := newSSHEnv(t)
	a := e.agent("", SSHOptions{})
	_, err := a.Start(testCtx(t), "nosuchhost.invalid", []string{"true"}, nil)
	var dns *net.DNSError
	if !errors.As(err, &dns) || !strings.HasPrefix(err.Error(), "lookup nosuchhost.invalid: ") {
		t.Errorf("got %v (%T), want lookup nosuchhost.invalid: …", err, err)
	}
}

// TestSSHUser: user@ in host > config User > SSHOptions.User > current user.
func TestSSHUser(t *testing.T) {
	e := newSSHEnv(t)
	cfg := "Host withuser\n  HostName 127.0.0.1\n  User bob\n"
	tests := []struct {
		host, optUser, want string
	}{
		{"alice@withuser", "carol", "alice"},
		{"alice@127.0.0.1", "", "alice"},
		{"withuser", "carol", "bob"},
		{"127.0.0.1", "carol", "carol"},
		{"127.0.0.1", "", localUser()},
	}
	for _, tt := range tests {
		a := e.agent(cfg, SSHOptions{User: tt.optUser})
		if err := run(t, a, tt.host, "true"); err != nil {
			t.Errorf("%s: %v", tt.host, err)
		}
		if got := e.srv.lastUser(); got != tt.want {
			t.Errorf("%s (option %q): server saw user %q, want %q", tt.host, tt.optUser, got, tt.want)
		}
	}
}

// TestSSHConfigFile: everything from a written ~/.ssh/config, found by
// default: HostName, Port, User, IdentityFile and UserKnownHostsFile (with
// ~ and %d, several files, the key in the second).
func TestSSHConfigFile(t *testing.T) {
	e := newSSHEnv(t)
	if err := os.MkdirAll(filepath.Join(e.home, ".ssh", "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := sshdtest.WriteKey(t, filepath.Join(e.home, ".ssh", "keys", "node1"), "")
	authKey := key.PublicKey()
	e.srv.set(func(s *testServer) { s.authKey = authKey })
	sshdtest.WriteKnown(t, filepath.Join(e.home, "kh2"), e.srv.addr, e.srv.hostKey.PublicKey())
	cfg := fmt.Sprintf(`# cluster
Host node1 node2
    HostName 127.0.0.1
    Port %s
    User dave
    IdentityFile ~/.ssh/keys/%%n
    UserKnownHostsFile ~/kh1 %%d/kh2
    StrictHostKeyChecking yes
    GlobalKnownHostsFile none
`, e.srv.port)
	if err := os.MkdirAll(filepath.Join(e.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, ".ssh", "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewSSH(SSHOptions{User: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t, a, "node1", "true"); err != nil {
		t.Fatalf("node1: %v", err)
	}
	if got := e.srv.lastUser(); got != "dave" {
		t.Errorf("user %q, want dave", got)
	}
	// node2's IdentityFile (~/.ssh/keys/node2) does not exist.
	_, err = a.Start(testCtx(t), "node2", []string{"true"}, nil)
	wantErr(t, err, "ssh: authentication failed for dave@node2 (127.0.0.1:"+e.srv.port+")")
}

// TestSSHDefaultKey: with no IdentityFile configured, ~/.ssh/id_ed25519 is
// used.
func TestSSHDefaultKey(t *testing.T) {
	e := newSSHEnv(t)
	if err := os.MkdirAll(filepath.Join(e.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := sshdtest.WriteKey(t, filepath.Join(e.home, ".ssh", "id_ed25519"), "")
	authKey := key.PublicKey()
	e.srv.set(func(s *testServer) { s.authKey = authKey })
	kh := filepath.Join(e.home, ".ssh", "known_hosts")
	sshdtest.WriteKnown(t, kh, e.srv.addr, e.srv.hostKey.PublicKey())
	cfg := filepath.Join(e.home, "cfg")
	body := "Host *\n  Port " + e.srv.port + "\n  GlobalKnownHostsFile none\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewSSH(SSHOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("default key and known_hosts: %v", err)
	}
}

func TestSSHAuthFailed(t *testing.T) {
	e := newSSHEnv(t)
	authKey := newKey(t).PublicKey()
	e.srv.set(func(s *testServer) { s.authKey = authKey })
	a := e.agent("", SSHOptions{User: "root"})
	_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	want := "ssh: authentication failed for root@127.0.0.1:" + e.srv.port + " (1 keys offered)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestSSHEncryptedKeySkipped: an encrypted identity is skipped, the next
// one is used.
func TestSSHEncryptedKeySkipped(t *testing.T) {
	e := newSSHEnv(t)
	enc := filepath.Join(e.home, "id_encrypted")
	encKey := sshdtest.WriteKey(t, enc, "secret")
	a := e.agent("Host 127.0.0.1\n  IdentityFile "+enc, SSHOptions{})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("with an encrypted key first: %v", err)
	}
	authKey := encKey.PublicKey() // only the encrypted key would do
	e.srv.set(func(s *testServer) { s.authKey = authKey })
	_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	wantErr(t, err, "authentication failed", "(1 keys offered)")
}

// serveAgent runs an ssh-agent with one new key on a socket in dir and
// returns the key.
func serveAgent(t *testing.T, dir string) ssh.PublicKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends when the cleanup closes the listener
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); agent.ServeAgent(keyring, c); c.Close() }() // ends when the client hangs up
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	t.Setenv("SSH_AUTH_SOCK", sock)
	pub, _ := ssh.NewPublicKey(priv.Public())
	return pub
}

func TestSSHAgent(t *testing.T) {
	e := newSSHEnv(t)
	authKey := serveAgent(t, e.home)
	e.srv.set(func(s *testServer) { s.authKey = authKey })
	a := e.agent("", SSHOptions{})
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("agent key: %v", err)
	}
	a = e.agent("Host 127.0.0.1\n  IdentitiesOnly yes", SSHOptions{})
	_, err := a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
	wantErr(t, err, "authentication failed", "(1 keys offered)")
}

// TestSSHMaxSessions: with MaxSessions 2, the server never sees more than 2
// connections being opened at once; authentication is slowed down so that
// six unlimited launches would overlap.
func TestSSHMaxSessions(t *testing.T) {
	e := newSSHEnv(t)
	e.srv.set(func(s *testServer) { s.authDelay = 50 * time.Millisecond })
	a := e.agent("", SSHOptions{MaxSessions: 2})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	procs := make([]Process, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = a.Start(testCtx(t), "127.0.0.1", []string{"cat"}, []byte("x"))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("launch %d: %v", i, err)
			continue
		}
		if err := closeAndWait(t, procs[i]); err != nil {
			t.Errorf("launch %d: %v", i, err)
		}
	}
	if got := e.srv.maxOpen(); got > 2 || got < 1 {
		t.Errorf("server saw %d connections being opened at once, want 1..2", got)
	}
}

// TestSSHAlgorithmsPreferKnown: the server has two host keys and
// known_hosts knows only the one x/crypto would not pick by default
// (it prefers ECDSA to Ed25519).
func TestSSHAlgorithmsPreferKnown(t *testing.T) {
	e := newSSHEnv(t)
	e.srv.set(func(s *testServer) { s.extraHostKey = newECDSAKey(t) })
	a := e.agent("", SSHOptions{}) // known_hosts has the ed25519 key
	if err := run(t, a, "127.0.0.1", "true"); err != nil {
		t.Errorf("known ed25519 key, server also has ecdsa: %v", err)
	}
}

// TestFingerprintsOnce: a key known under the host's name and address is
// listed once.
func TestFingerprintsOnce(t *testing.T) {
	k, other := newKey(t).PublicKey(), newKey(t).PublicKey()
	want := ssh.FingerprintSHA256(k) + ", " + ssh.FingerprintSHA256(other)
	if got := fingerprints([]ssh.PublicKey{k, other, k}); got != want {
		t.Errorf("fingerprints = %s, want %s", got, want)
	}
}

// TestSSHAuthNotTried: when authentication fails, the GSSAPI and
// hostbased authentication the config turns on, which the native client
// does not try, are named with their file and line (the first value
// wins, from the user's file or the system's), and the way out is given.
func TestSSHAuthNotTried(t *testing.T) {
	e := newSSHEnv(t)
	authKey := newKey(t).PublicKey()
	e.srv.set(func(s *testServer) { s.authKey = authKey })
	failed := "ssh: authentication failed for root@127.0.0.1:" + e.srv.port + " (1 keys offered)"
	for _, tc := range []struct{ name, user, system, want string }{
		{"both", "Host 127.0.0.1\n  HostbasedAuthentication yes\n", "Host *\n  GSSAPIAuthentication yes\n",
			"; not tried: GSSAPIAuthentication yes (SYSTEM:2), HostbasedAuthentication yes (USER:2), " +
				"which mpirun's own ssh client does not do; use the system ssh: --launch-agent 'ssh %h'"},
		{"turned off first", "Host *\n  GSSAPIAuthentication no\n", "Host *\n  GSSAPIAuthentication yes\n", ""},
		{"other host", "Host node9\n  GSSAPIAuthentication yes\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			user := writeFile(t, dir, "user", tc.user+"\n"+e.base())
			system := writeFile(t, dir, "system", tc.system)
			a, err := NewSSH(SSHOptions{User: "root", ConfigFile: user, SystemConfigFile: system})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Start(testCtx(t), "127.0.0.1", []string{"true"}, nil)
			want := failed + strings.NewReplacer("USER", user, "SYSTEM", system).Replace(tc.want)
			if err == nil || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
		})
	}
}
