package main

import (
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"prsh/testbed"
)

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
