package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"prsh/internal/sshdtest"
	"prsh/testbed"
	tbnodes "prsh/testbed/nodes"
)

// TestOpenSSH launches through the real OpenSSH server with mpirun's native
// ssh client: three aliases of one private sshd and a spawn degree of 1, so
// mpirun starts the first orted and the orteds start the other two, through
// sshd, with the config file mpirun hands down to them.
func TestOpenSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	home := t.TempDir()
	t.Setenv("HOME", home) // no user keys, config or known_hosts
	t.Setenv("SSH_AUTH_SOCK", "")
	cfg := srv.WriteConfig(t, "a1", "a2", "a3")
	orted := filepath.Join(bin, "orted")
	t.Cleanup(func() { checkNoOrted(t, orted) })

	run := func(args ...string) result {
		t.Helper()
		args = append([]string{"--ssh-config", cfg, "-H", "a1,a2,a3", "--spawn-degree", "1"}, args...)
		return mpirunEnv(t, sshdEnv(), args...)
	}

	res := run("sh", "-c", `echo $PRSH_RANK $PRSH_NODE`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	got := lines(res.stdout)
	sort.Strings(got)
	if want := []string{"0 a1", "1 a2", "2 a3"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ranks ran as:\n%s\nwant:\n%s", res.stdout, strings.Join(want, "\n"))
	}
	checkOneLine(t, res.stderr, "")
	checkNoOrted(t, orted)

	res = run("sh", "-c", "exit 5")
	if res.status != 5 {
		t.Errorf("exit %d, want 5; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: a[1-3]: rank [0-2] exited with status 5$`)
}

// sshdEnv is the test's environment without the variables that would point
// mpirun at another cluster's hostfile or ssh config.
func sshdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MPIRUN_HOSTFILE=") && !strings.HasPrefix(kv, "MPIRUN_SSH_CONFIG=") {
			env = append(env, kv)
		}
	}
	return env
}

// mpirunEnv runs mpirun with env, outside any testbed cluster.
func mpirunEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runMpirun(t, filepath.Join(bin, "mpirun"), env, args...)
}

// checkNoOrted fails the test if a process of path (bin's orted) is still
// running within 10 s, names them and kills them.
func checkNoOrted(t *testing.T, path string) {
	t.Helper()
	var left []int
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if left = procsOf(path); len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			break
		}
	}
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Errorf("orted still running after mpirun exited: pids %v", left)
}

// procsOf lists the processes whose command line mentions path: orted
// itself, and any shell sshd started it with.
func procsOf(path string) []int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone
		}
		if !strings.Contains(string(b), path) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// clusterConfig writes an ssh config: head, then the cluster's own
// config less the lines that start with one of drop (after spaces).
func clusterConfig(t *testing.T, c *testbed.Cluster, head string, drop ...string) string {
	t.Helper()
	base, err := os.ReadFile(c.SSHConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(base), "\n") {
		trimmed := strings.TrimSpace(l)
		if !slices.ContainsFunc(drop, func(p string) bool { return strings.HasPrefix(trimmed, p) }) {
			kept = append(kept, l)
		}
	}
	path := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(path, []byte(head+"\n"+strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkRanOn fails unless mpirun ended 0 and the ranks printed want
// (sorted), each "RANK NODE".
func checkRanOn(t *testing.T, res result, want ...string) {
	t.Helper()
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	got := lines(res.stdout)
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ranks ran as:\n%s\nwant:\n%s", res.stdout, strings.Join(want, "\n"))
	}
}

// TestProxyJump: nodes behind a jump host are reached through it, by
// mpirun and by the orteds down a chain of daemons (δ=1): node001 is
// reached directly, node002 and node003 each through a channel that
// node001's ssh server opens.
func TestProxyJump(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	config := clusterConfig(t, c, "Host node002 node003\n    ProxyJump node001\n")
	res := mpirun(t, c, "--ssh-config", config, "--spawn-degree", "1", "sh", "-c", `echo $PRSH_RANK $PRSH_NODE`)
	checkRanOn(t, res, "0 node001", "1 node002", "2 node003")
	checkOneLine(t, res.stderr, "")
	if got := c.Tunnels(); got != 2 {
		t.Errorf("%d tunnels through the jump host, want 2", got)
	}
}

// TestProxyCommand: the command is the connection (here bash's /dev/tcp,
// noting each use in a file); a command that fails is named with its
// exit status, and nothing connects around it.
func TestProxyCommand(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	used := filepath.Join(t.TempDir(), "used")
	proxy := `ProxyCommand bash -c 'echo %n %r >> ` + used + `; exec 3<>/dev/tcp/%h/%p; cat <&3 & exec cat >&3'`
	config := clusterConfig(t, c, "Host node002\n    "+proxy+"\n")
	res := mpirun(t, c, "--ssh-config", config, "sh", "-c", `echo $PRSH_RANK $PRSH_NODE`)
	checkRanOn(t, res, "0 node001", "1 node002")
	if b, err := os.ReadFile(used); err != nil || strings.TrimSpace(string(b)) != "node002 "+me.Username {
		t.Errorf("the ProxyCommand's notes: %q, %v", b, err)
	}

	config = clusterConfig(t, c, "Host node002\n    ProxyCommand sh -c 'echo no way >&2; exit 3'\n")
	sessions := c.Sessions()
	res = mpirun(t, c, "--ssh-config", config, "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node002: ssh: ProxyCommand sh -c 'echo no way >&2; exit 3': exit status 3: no way$`)
	if got := c.Sessions() - sessions; got > 1 {
		t.Errorf("%d sessions: node002 was reached around its ProxyCommand", got)
	}
}

// TestSystemSSHConfig: the system-wide file is read after the user's (here
// it alone names the key the nodes accept), by mpirun and by the orteds;
// an explicit --ssh-config leaves it out unless named, as ssh -F does; a
// setting there that the native client cannot honour stops mpirun with
// its file and line before anything starts.
func TestSystemSSHConfig(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	userConfig := clusterConfig(t, c, "", "IdentityFile")
	dir := t.TempDir()
	system := filepath.Join(dir, "ssh_config")
	os.WriteFile(system, []byte("Host node*\n    IdentityFile "+c.IdentityPath()+"\n"), 0o644)
	res := mpirun(t, c, "--ssh-config", userConfig, "--ssh-system-config", system, "--spawn-degree", "1",
		"sh", "-c", `echo $PRSH_RANK $PRSH_NODE`)
	checkRanOn(t, res, "0 node001", "1 node002", "2 node003")

	// The same key in a Match block: read where its criteria hold (exec
	// runs for each node, by mpirun and by the orteds), not where they do
	// not.
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	execs := filepath.Join(dir, "execs")
	t.Setenv("SHELL", "/bin/sh") // exec runs in the user's shell, as in OpenSSH: here not bash, which reads ~/.bashrc under ssh
	os.WriteFile(system, []byte("Match originalhost node* exec \"echo %n >> "+execs+"\"\n    IdentityFile "+c.IdentityPath()+"\n"), 0o644)
	res = mpirun(t, c, "--ssh-config", userConfig, "--ssh-system-config", system, "--spawn-degree", "1",
		"sh", "-c", `echo $PRSH_RANK $PRSH_NODE`)
	checkRanOn(t, res, "0 node001", "1 node002", "2 node003")
	if ran, _ := os.ReadFile(execs); !strings.Contains(string(ran), "node003") {
		t.Errorf("Match exec ran for %q, want node003 among them", ran)
	}
	os.WriteFile(system, []byte("Match originalhost node* !localuser "+me.Username+"\n    IdentityFile "+c.IdentityPath()+"\n"), 0o644)
	res = mpirun(t, c, "--ssh-config", userConfig, "--ssh-system-config", system, "/bin/true")
	if res.status != 255 {
		t.Errorf("a Match that does not hold: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}

	res = mpirun(t, c, "--ssh-config", userConfig, "/bin/true")
	if res.status != 255 {
		t.Errorf("without the system file: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node00[1-3]: ssh: authentication failed`)

	for _, tc := range []struct{ text, line string }{
		{"Host node002\n    ForwardX11 yes\n", ":2: ForwardX11 yes for node002: mpirun's own ssh client cannot do this"},
		{"\nMatch canonical all\n    Port 1\n", ":2: Match canonical all: mpirun's own ssh client cannot evaluate canonical"},
	} {
		os.WriteFile(system, []byte(tc.text), 0o644)
		sessions := c.Sessions()
		res = mpirun(t, c, "--ssh-config", c.SSHConfigPath(), "--ssh-system-config", system, "/bin/true")
		if res.status != statusUsage {
			t.Errorf("exit %d, want %d", res.status, statusUsage)
		}
		checkOneLine(t, res.stderr, `^mpirun: ssh config `+regexp.QuoteMeta(system+tc.line)+`; use the system ssh: --launch-agent 'ssh %h'`)
		if c.Sessions() != sessions {
			t.Errorf("%d ssh sessions opened", c.Sessions()-sessions)
		}
	}
}

// TestMaxStartupsRetried: every node's sshd is at its MaxStartups when a
// flat launch connects to all of them at once; they drop mpirun's
// connections until their startups end, and mpirun's retries then
// launch the job. The same through OpenSSH's client (--launch-agent),
// which exits 255 with kex_exchange_identification on each drop.
func TestMaxStartupsRetried(t *testing.T) {
	for _, agent := range []string{"native", "openssh"} {
		t.Run(agent, func(t *testing.T) {
			const n = 8
			faults := map[string]testbed.Fault{}
			for i := 1; i <= n; i++ {
				faults[tbnodes.Name(i, n)] = testbed.Fault{MaxStartups: 1}
			}
			c := cluster(t, testbed.Config{Nodes: n, Faults: faults})
			args := []string{"--spawn-degree", itoa(n)}
			if agent == "openssh" {
				args = append(args, "--launch-agent", "ssh -F "+c.SSHConfigPath()+" %h")
			}
			holders := holdStartups(t, c)
			cmd, stdout, stderr := startMpirun(t, c, append(args, "sh", "-c", `echo "$PRSH_TESTBED_NODE"`)...)
			for _, node := range c.Nodes() {
				waitDropped(t, c, node.Name, stderr)
			}
			for _, h := range holders {
				h.Close()
			}
			if status := waitExit(t, cmd); status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", status, stderr)
			}
			checkOneLine(t, stderr.String(), "") // the tries are no failure
			var want []string
			for _, node := range c.Nodes() {
				want = append(want, node.Name)
			}
			wantSet(t, stdout.String(), want...)
			if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
				t.Fatalf("left running: %+v", left)
			}
		})
	}
}

// TestMaxStartupsNeverClears: node005 stays at its MaxStartups; its parent
// orted gives up after its tries, and the job ends naming node005 and the
// likely cause, with nothing left running.
func TestMaxStartupsNeverClears(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 7, Faults: map[string]testbed.Fault{"node005": {MaxStartups: 1}}})
	h, err := c.HoldStartup("node005")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res := mpirun(t, c, "--spawn-degree", "2", "sleep", "60")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node005: ssh: connection dropped during the handshake 5 times \(the node's sshd may be limiting concurrent logins: MaxStartups\)`)
	if got := c.Dropped("node005"); got != 5 {
		t.Errorf("node005 dropped %d connections, want 5", got)
	}
}

// holdStartups takes every node's startups (MaxStartups 1).
func holdStartups(t *testing.T, c *testbed.Cluster) []io.Closer {
	t.Helper()
	var out []io.Closer
	for _, node := range c.Nodes() {
		h, err := c.HoldStartup(node.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		out = append(out, h)
	}
	return out
}

// waitDropped waits until the node has dropped a connection.
func waitDropped(t *testing.T, c *testbed.Cluster, node string, stderr *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); c.Dropped(node) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s dropped no connection; mpirun's stderr:\n%s", node, stderr)
		}
	}
}

// TestAuthenticationFails: a key the nodes do not accept ends the job with
// one line naming the node and the cause.
func TestAuthenticationFails(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	stranger := filepath.Join(dir, "id_stranger")
	os.WriteFile(stranger, pem.EncodeToMemory(block), 0o600)
	cfg, _ := os.ReadFile(c.SSHConfigPath())
	mine := strings.ReplaceAll(string(cfg), filepath.Join(c.Dir(), "id_ed25519"), stranger)
	if mine == string(cfg) {
		t.Fatal("the testbed's ssh_config names no IdentityFile to replace")
	}
	cfgPath := filepath.Join(dir, "ssh_config")
	os.WriteFile(cfgPath, []byte(mine), 0o600)
	t.Setenv("SSH_AUTH_SOCK", "")
	res := mpirun(t, c, "--ssh-config", cfgPath, "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node00[1-3]: ssh: authentication failed for `)
}
