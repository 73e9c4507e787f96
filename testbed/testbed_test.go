package testbed

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"prsh/testbed/nodes"
)

// Generous bound that turns a hang into a failure; never a performance
// assertion.
const patience = 20 * time.Second

func TestMain(m *testing.M) {
	MaybeRunUTSHelper()
	os.Exit(m.Run())
}

func startCluster(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	c, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func mustNode(t *testing.T, c *Cluster, name string) Node {
	t.Helper()
	n, ok := c.Node(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n
}

// clientConfig authenticates with the key file the cluster wrote and
// checks the host key against its known_hosts, as a real client would.
func clientConfig(t *testing.T, c *Cluster) *ssh.ClientConfig {
	t.Helper()
	pem, err := os.ReadFile(c.IdentityPath())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatalf("parse %s: %v", c.IdentityPath(), err)
	}
	hk, err := knownhosts.New(c.KnownHostsPath())
	if err != nil {
		t.Fatalf("known_hosts: %v", err)
	}
	return &ssh.ClientConfig{
		User:            c.User(),
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hk,
		Timeout:         patience,
	}
}

func addrOf(n Node) string { return net.JoinHostPort(n.Addr, strconv.Itoa(n.Port)) }

func dial(t *testing.T, c *Cluster, name string) *ssh.Client {
	t.Helper()
	cl, err := ssh.Dial("tcp", addrOf(mustNode(t, c, name)), clientConfig(t, c))
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// runOn runs cmd on node and returns stdout, stderr and Run's error, or
// fails the test if that takes longer than patience.
func runOn(t *testing.T, c *Cluster, name, cmd string) (string, string, error) {
	t.Helper()
	sess, err := dial(t, c, name).NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var out, errb bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errb
	done := make(chan error, 1)
	go func() { done <- sess.Run(cmd) }()
	select {
	case err = <-done:
	case <-time.After(patience):
		t.Fatalf("%s: %q did not finish", name, cmd)
	}
	return out.String(), errb.String(), err
}

func exitError(t *testing.T, err error) *ssh.ExitError {
	t.Helper()
	var ee *ssh.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("want *ssh.ExitError, got %T %v", err, err)
	}
	return ee
}

// eventually polls cond until it holds or patience runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEchoHi(t *testing.T) {
	c := startCluster(t, Config{Nodes: 3, SSHLatency: 10 * time.Millisecond})
	out, errOut, err := runOn(t, c, "node002", "echo hi; echo oops >&2")
	if err != nil {
		t.Fatalf("run: %v (stderr %q)", err, errOut)
	}
	if out != "hi\n" || errOut != "oops\n" {
		t.Errorf("stdout %q stderr %q, want \"hi\\n\" and \"oops\\n\"", out, errOut)
	}
	if got := c.Sessions(); got != 1 {
		t.Errorf("Sessions() = %d, want 1", got)
	}
}

func TestExitStatus(t *testing.T) {
	c := startCluster(t, Config{Nodes: 1})
	_, _, err := runOn(t, c, "node001", "exit 3")
	if got := exitError(t, err).ExitStatus(); got != 3 {
		t.Errorf("exit status %d, want 3", got)
	}
}

func TestExitSignal(t *testing.T) {
	c := startCluster(t, Config{Nodes: 1})
	_, _, err := runOn(t, c, "node001", "kill -9 $$")
	if got := exitError(t, err).Signal(); got != "KILL" {
		t.Errorf("exit signal %q, want KILL", got)
	}
}

// Output written just before exit must reach the client before the exit
// status, even when it is more than a pipe buffer.
func TestOutputFlushedBeforeExit(t *testing.T) {
	c := startCluster(t, Config{Nodes: 1})
	out, _, err := runOn(t, c, "node001", "head -c 300000 /dev/zero; exit 5")
	if got := exitError(t, err).ExitStatus(); got != 5 {
		t.Errorf("exit status %d, want 5", got)
	}
	if len(out) != 300000 {
		t.Errorf("got %d bytes of stdout, want 300000", len(out))
	}
}

func TestEnvironment(t *testing.T) {
	c := startCluster(t, Config{Nodes: 4, Env: []string{"EXTRA=yes"}})
	n := mustNode(t, c, "node004")
	out, _, err := runOn(t, c, "node004",
		`echo "$SSH_CONNECTION"; echo "$PRSH_TESTBED_NODE"; echo "$PRSH_TESTBED_RUN"; echo "$EXTRA"; echo "$USER"; pwd`)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 6 {
		t.Fatalf("output %q", out)
	}
	f := strings.Fields(lines[0])
	if len(f) != 4 || f[2] != n.Addr || f[3] != strconv.Itoa(n.Port) {
		t.Errorf("SSH_CONNECTION %q, want server %s %d", lines[0], n.Addr, n.Port)
	}
	if lines[1] != "node004" || lines[2] != c.RunID() || lines[3] != "yes" || lines[4] != c.User() {
		t.Errorf("node %q run %q extra %q user %q", lines[1], lines[2], lines[3], lines[4])
	}
	if lines[5] != nodes.HomeDir() {
		t.Errorf("working dir %q, want %q", lines[5], nodes.HomeDir())
	}
}

func TestStdin(t *testing.T) {
	c := startCluster(t, Config{Nodes: 1})
	sess, err := dial(t, c, "node001").NewSession()
	if err != nil {
		t.Fatal(err)
	}
	sess.Stdin = strings.NewReader("line one\nline two\n")
	out, err := sess.Output("wc -l")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != "2" {
		t.Errorf("wc -l said %q, want 2", out)
	}
}

// The runtime's lifeline: when the connection drops, the process sees EOF
// on stdin and is not killed.
func TestDisconnectClosesStdinWithoutKilling(t *testing.T) {
	c := startCluster(t, Config{Nodes: 2})
	marker := filepath.Join(t.TempDir(), "eof")
	cl := dial(t, c, "node002")
	sess, err := cl.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("cat >/dev/null; echo eof > " + marker); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("keep going\n"))
	eventually(t, "cat to start", func() bool {
		for _, p := range c.Leftovers() {
			if p.Cmdline == "cat" {
				return true
			}
		}
		return false
	})
	cl.Close()
	eventually(t, "the process to see EOF", func() bool {
		b, _ := os.ReadFile(marker)
		return string(b) == "eof\n"
	})
	if left := c.WaitNoLeftovers(patience); len(left) != 0 {
		t.Errorf("left after EOF: %v", left)
	}
}

func TestLeftovers(t *testing.T) {
	c := startCluster(t, Config{Nodes: 2})
	if _, _, err := runOn(t, c, "node001", "sleep 30 </dev/null >/dev/null 2>&1 &"); err != nil {
		t.Fatal(err)
	}
	left := c.Leftovers()
	if len(left) != 1 || left[0].Node != "node001" || !strings.Contains(left[0].Cmdline, "sleep 30") {
		t.Fatalf("Leftovers() = %+v, want one sleep 30 on node001", left)
	}
	c.KillLeftovers()
	if left := c.WaitNoLeftovers(patience); len(left) != 0 {
		t.Errorf("after KillLeftovers: %+v", left)
	}
}

func TestSignalRequest(t *testing.T) {
	c := startCluster(t, Config{Nodes: 1})
	sess, err := dial(t, c, "node001").NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("echo ready; sleep 30"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := stdout.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := sess.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := exitError(t, sess.Wait()).Signal(); got != "TERM" {
		t.Errorf("exit signal %q, want TERM", got)
	}
}

func TestRefuse(t *testing.T) {
	c := startCluster(t, Config{Nodes: 3, Faults: map[string]Fault{"node002": {Refuse: true}}})
	_, err := net.DialTimeout("tcp", addrOf(mustNode(t, c, "node002")), patience)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial node002: %v, want ECONNREFUSED", err)
	}
	if _, _, err := runOn(t, c, "node003", "true"); err != nil {
		t.Errorf("node003: %v", err)
	}
}

func TestHang(t *testing.T) {
	c := startCluster(t, Config{Nodes: 1, Faults: map[string]Fault{"node001": {Hang: true}}})
	conn, err := net.DialTimeout("tcp", addrOf(mustNode(t, c, "node001")), patience)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	_, _, _, err = ssh.NewClientConn(conn, addrOf(mustNode(t, c, "node001")), clientConfig(t, c))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("handshake: %v, want a timeout", err)
	}
}

func TestWrongHostKey(t *testing.T) {
	c := startCluster(t, Config{Nodes: 2, Faults: map[string]Fault{"node001": {WrongHostKey: true}}})
	_, err := ssh.Dial("tcp", addrOf(mustNode(t, c, "node001")), clientConfig(t, c))
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		t.Errorf("dial: %v, want a knownhosts key mismatch", err)
	}
	if _, _, err := runOn(t, c, "node002", "true"); err != nil {
		t.Errorf("node002: %v", err)
	}
}

func TestWrongClientKeyOrUser(t *testing.T) {
	c := startCluster(t, Config{Nodes: 1})
	other, err := newSigner()
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientConfig(t, c)
	cfg.Auth = []ssh.AuthMethod{ssh.PublicKeys(other)}
	if _, err := ssh.Dial("tcp", addrOf(mustNode(t, c, "node001")), cfg); err == nil {
		t.Error("a foreign client key was accepted")
	}
	cfg = clientConfig(t, c)
	cfg.User = "nobody-" + c.User()
	if _, err := ssh.Dial("tcp", addrOf(mustNode(t, c, "node001")), cfg); err == nil {
		t.Error("a foreign user was accepted")
	}
}

func TestKillAfter(t *testing.T) {
	c := startCluster(t, Config{Nodes: 2, Faults: map[string]Fault{"node002": {KillAfter: 100 * time.Millisecond}}})
	_, _, err := runOn(t, c, "node002", "sleep 30")
	if got := exitError(t, err).Signal(); got != "KILL" {
		t.Errorf("first session: exit signal %q, want KILL", got)
	}
	_, _, err = runOn(t, c, "node002", "true")
	if got := exitError(t, err).Signal(); got != "KILL" {
		t.Errorf("session on the dead node: exit signal %q, want KILL", got)
	}
	if _, _, err := runOn(t, c, "node001", "true"); err != nil {
		t.Errorf("node001: %v", err)
	}
}

func TestUTS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("UTS namespaces need root")
	}
	c := startCluster(t, Config{Nodes: 3, UTS: true})
	out, errOut, err := runOn(t, c, "node003", "hostname")
	if err != nil {
		t.Fatalf("%v (stderr %q)", err, errOut)
	}
	if out != "node003\n" {
		t.Errorf("hostname %q, want node003", out)
	}
	mine, _ := os.Hostname()
	if mine == "node003" {
		t.Error("the test's own hostname changed")
	}
}

func TestUTSNeedsRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root")
	}
	if _, err := Start(Config{Nodes: 1, UTS: true}); err == nil {
		t.Error("UTS without root was accepted")
	}
}

func TestOpenSSHClient(t *testing.T) {
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no ssh client on PATH")
	}
	c := startCluster(t, Config{Nodes: 3})
	run := func(args ...string) (string, error) {
		cmd := exec.Command(sshPath, append([]string{"-F", c.SSHConfigPath()}, args...)...)
		cmd.Stdin = nil
		cmd.WaitDelay = patience
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("node003", "true"); err != nil {
		t.Fatalf("ssh node003 true: %v: %s", err, out)
	}
	out, err := run("node003", `echo "$PRSH_TESTBED_NODE"`)
	if err != nil || out != "node003\n" {
		t.Errorf("ssh node003: %q, %v", out, err)
	}
	_, err = run("node001", "exit 7")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("ssh node001 exit 7: %v", err)
	}
}

func TestFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startCluster(t, Config{Nodes: 2, Slots: 4, Dir: dir})
	if c.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", c.Dir(), dir)
	}
	hf, err := os.ReadFile(c.HostfilePath())
	if err != nil || string(hf) != "node001 slots=4\nnode002 slots=4\n" {
		t.Errorf("hostfile %q, %v", hf, err)
	}
	st, err := os.Stat(c.IdentityPath())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("identity file: %v %v", st, err)
	}
	cfg, _ := os.ReadFile(c.SSHConfigPath())
	n := mustNode(t, c, "node002")
	for _, want := range []string{"Host node002\n", "HostName " + n.Addr + "\n", "Port " + strconv.Itoa(n.Port) + "\n", "IdentityFile " + c.IdentityPath()} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("ssh_config lacks %q", want)
		}
	}
	env := strings.Join(c.Env(), "\n")
	for _, want := range []string{"MPIRUN_HOSTFILE=" + c.HostfilePath(), "MPIRUN_SSH_CONFIG=" + c.SSHConfigPath(), "PRSH_TESTBED_RUN=" + c.RunID()} {
		if !strings.Contains(env, want) {
			t.Errorf("Env() lacks %q", want)
		}
	}
	c.Close()
	if _, err := os.Stat(c.HostfilePath()); err != nil {
		t.Errorf("Close removed a directory it did not create: %v", err)
	}
}

func TestCloseKillsAndCleansUp(t *testing.T) {
	c, err := Start(Config{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := mustNode(t, c, "node001")
	cl, err := ssh.Dial("tcp", addrOf(n), clientConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sess, err := cl.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	// exec env -i scrubs the marker: only the direct-child kill catches it.
	if err := sess.Start("exec env -i sleep 30"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the session to start", func() bool { return c.Sessions() == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Wait(); err == nil {
		t.Error("session ended cleanly after Close")
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("temp dir still there: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addrOf(n), patience); err == nil {
		t.Error("node still listening after Close")
	}
}

func TestValidation(t *testing.T) {
	for _, cfg := range []Config{
		{Nodes: 0},
		{Nodes: 2, Slots: -1},
		{Nodes: 2, Faults: map[string]Fault{"node003": {Refuse: true}}},
		{Nodes: 2, Faults: map[string]Fault{"node1": {Refuse: true}}},
	} {
		if c, err := Start(cfg); err == nil {
			c.Close()
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
}

func TestNamesAndAddresses(t *testing.T) {
	if got := nodes.Name(7, 12); got != "node007" {
		t.Errorf("nodes.Name(7, 12) = %q", got)
	}
	if got := nodes.Name(7, 5000); got != "node0007" {
		t.Errorf("nodes.Name(7, 5000) = %q", got)
	}
	seen := map[string]bool{}
	for i := 1; i <= 70000; i++ {
		a, err := nodes.Addr(1, i)
		if err != nil {
			t.Fatal(err)
		}
		b := a.As4()
		if b[0] != 127 || b[3] == 0 || b[3] == 255 || a.String() == "127.0.0.1" || seen[a.String()] {
			t.Fatalf("node %d: bad or duplicate address %s", i, a)
		}
		seen[a.String()] = true
	}
}

// TestClustersDoNotShareAddresses: clusters up at the same time, in this
// process or another, get addresses of their own, so that cutting one's
// links by address leaves the others alone.
func TestClustersDoNotShareAddresses(t *testing.T) {
	a := startCluster(t, Config{Nodes: 3})
	b := startCluster(t, Config{Nodes: 3})
	seen := map[string]string{}
	for _, c := range []*Cluster{a, b} {
		for _, n := range c.Nodes() {
			if other, ok := seen[n.Addr]; ok {
				t.Fatalf("%s of one cluster and %s of another share %s", n.Name, other, n.Addr)
			}
			seen[n.Addr] = n.Name
		}
	}
	if _, err := claim(a.block); err == nil {
		t.Fatalf("block %d of a running cluster could be claimed again", a.block)
	}
}

func TestManyNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	c := startCluster(t, Config{Nodes: 1200})
	nodes := c.Nodes()
	if len(nodes) != 1200 || nodes[0].Name != "node0001" || nodes[1199].Name != "node1200" {
		t.Fatalf("nodes %v … %v", nodes[0], nodes[len(nodes)-1])
	}
	out, _, err := runOn(t, c, "node1200", `echo "$PRSH_TESTBED_NODE"`)
	if err != nil || out != "node1200\n" {
		t.Errorf("node1200: %q %v", out, err)
	}
}

// The runtime reads ssh_config with github.com/kevinburke/ssh_config; make
// sure that parser understands the file as OpenSSH does.
func TestSSHConfigParses(t *testing.T) {
	c := startCluster(t, Config{Nodes: 3})
	f, err := os.Open(c.SSHConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := sshconfig.Decode(f)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	n := mustNode(t, c, "node003")
	for key, want := range map[string]string{
		"HostName":              n.Addr,
		"Port":                  strconv.Itoa(n.Port),
		"User":                  c.User(),
		"IdentityFile":          c.IdentityPath(),
		"UserKnownHostsFile":    c.KnownHostsPath(),
		"StrictHostKeyChecking": "yes",
	} {
		if got, err := cfg.Get("node003", key); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", key, got, err, want)
		}
	}
}

// TestMaxStartups: past its MaxStartups, a node closes new connections
// before the ssh banner; once the startups end, it serves again.
func TestMaxStartups(t *testing.T) {
	c := startCluster(t, Config{Nodes: 2, Faults: map[string]Fault{"node001": {MaxStartups: 1}}})
	holder, err := c.HoldStartup("node001")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ssh.Dial("tcp", addrOf(mustNode(t, c, "node001")), clientConfig(t, c)); err == nil {
		t.Fatal("a second connection in its handshake was served, want it dropped")
	}
	if n := c.Dropped("node001"); n != 1 {
		t.Errorf("Dropped = %d, want 1", n)
	}
	if _, err := c.HoldStartup("node002"); err != nil {
		t.Errorf("node002 has no limit: %v", err)
	}
	holder.Close()
	// The server sees the holder go when its read fails: until then a new
	// connection may still be dropped.
	for try := 1; ; try++ {
		client, err := ssh.Dial("tcp", addrOf(mustNode(t, c, "node001")), clientConfig(t, c))
		if err == nil {
			client.Close()
			break
		}
		if try == 100 {
			t.Fatalf("node001 still drops connections after its startups ended: %v", err)
		}
	}
}

// A hidden directory is empty on every node and whole for the caller;
// each node has a TMPDIR of its own.
func TestHideAndNodeTmp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	hidden := t.TempDir()
	if err := os.WriteFile(filepath.Join(hidden, "secret"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, Config{Nodes: 2, Hide: []string{hidden}, NodeTmp: true})
	out, errOut, err := runOn(t, c, "node002", "ls -A "+hidden+`; echo "tmp=$TMPDIR"; touch "$TMPDIR/left"`)
	if err != nil {
		t.Fatalf("%v (stderr %q)", err, errOut)
	}
	if want := "tmp=" + c.NodeTmpDir("node002") + "\n"; out != want {
		t.Errorf("node002 saw %q, want an empty %s and %q", out, hidden, want)
	}
	if _, err := os.Stat(filepath.Join(hidden, "secret")); err != nil {
		t.Errorf("the caller lost the hidden file: %v", err)
	}
	if got := c.NodeTmpFiles("le"); len(got) != 1 || got[0] != "node002/left" {
		t.Errorf("NodeTmpFiles = %v, want [node002/left]", got)
	}
}
