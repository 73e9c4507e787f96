package launch

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// agentWithConfig returns an SSH agent reading config, with HOME at home.
func agentWithConfig(t *testing.T, config string, opts SSHOptions) (*SSH, string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	opts.ConfigFile = filepath.Join(home, "config")
	if err := os.WriteFile(opts.ConfigFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewSSH(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, home
}

func TestResolve(t *testing.T) {
	a, home := agentWithConfig(t, `
Host node*
    HostName %h.cluster
    Port 2222
    IdentityFile ~/.ssh/id_%r_%h
    IdentityFile %d/keys/%n-%p
    UserKnownHostsFile ~/kh1 /etc/kh2
    StrictHostKeyChecking accept-new
    ConnectTimeout 3
    IdentitiesOnly yes
Host *
    User eve
    GlobalKnownHostsFile none
`, SSHOptions{ConnectTimeout: time.Minute})
	got, err := a.resolve("root@node5")
	if err != nil {
		t.Fatal(err)
	}
	want := &target{
		alias: "node5", user: "root", hostname: "node5.cluster", port: "2222",
		identityFiles: []string{
			filepath.Join(home, ".ssh/id_root_node5.cluster"),
			filepath.Join(home, "keys/node5-2222"),
		},
		identitiesOnly: true,
		knownHosts:     []string{filepath.Join(home, "kh1"), "/etc/kh2"},
		strict:         strictAcceptNew,
		timeout:        3 * time.Second,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolve:\n got %+v\nwant %+v", got, want)
	}

	got, err = a.resolve("other")
	if err != nil {
		t.Fatal(err)
	}
	want = &target{
		alias: "other", user: "eve", hostname: "other", port: "22",
		knownHosts: []string{filepath.Join(home, ".ssh/known_hosts")},
		strict:     strictYes, timeout: time.Minute,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolve defaults:\n got %+v\nwant %+v", got, want)
	}
}

func TestResolveIPv6(t *testing.T) {
	a, _ := agentWithConfig(t, "", SSHOptions{})
	got, err := a.resolve("u@[::1]")
	if err != nil || got.addr() != "[::1]:22" || got.user != "u" {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestResolveNoConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	a, err := NewSSH(SSHOptions{User: "opt"}) // no ~/.ssh/config: fine
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.resolve("h")
	if err != nil {
		t.Fatal(err)
	}
	if got.user != "opt" || got.port != "22" || got.timeout != 10*time.Second || got.strict != strictYes ||
		!reflect.DeepEqual(got.knownHosts, []string{filepath.Join(home, ".ssh/known_hosts")}) ||
		!reflect.DeepEqual(got.globalKnown, []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}) {
		t.Errorf("defaults: %+v", got)
	}
	if _, err := NewSSH(SSHOptions{ConfigFile: filepath.Join(home, "missing")}); err == nil {
		t.Error("an explicit config file that does not exist is an error")
	}
}

func TestResolveErrors(t *testing.T) {
	for _, cfg := range []string{
		"Port x", "Port 70000", "ConnectTimeout soon", "StrictHostKeyChecking maybe",
		"IdentitiesOnly perhaps", "IdentityFile ~/id_%z", "HostName %q",
	} {
		a, _ := agentWithConfig(t, "Host *\n  "+cfg+"\n", SSHOptions{})
		if got, err := a.resolve("h"); err == nil {
			t.Errorf("%q: got %+v, want an error", cfg, got)
		}
	}
	a, _ := agentWithConfig(t, "", SSHOptions{})
	if _, err := a.resolve("user@"); err == nil {
		t.Error("empty host: want an error")
	}
}

func TestResolveStrictModes(t *testing.T) {
	for v, want := range map[string]strictMode{
		"yes": strictYes, "ask": strictYes, "accept-new": strictAcceptNew, "no": strictNo, "off": strictNo,
	} {
		a, _ := agentWithConfig(t, "StrictHostKeyChecking "+v+"\n", SSHOptions{})
		got, err := a.resolve("h")
		if err != nil || got.strict != want {
			t.Errorf("%s: got %v, %v; want %v", v, got.strict, err, want)
		}
	}
}

func TestKnownHostsNone(t *testing.T) {
	a, _ := agentWithConfig(t, "UserKnownHostsFile none\nGlobalKnownHostsFile none\n", SSHOptions{})
	got, err := a.resolve("h")
	if err != nil || got.knownHosts != nil || got.globalKnown != nil {
		t.Errorf("got %+v, %v", got, err)
	}
}

// TestUnsupportedSettings: ProxyJump and ProxyCommand are refused with the
// file and line, never ignored; "none" is no proxy.
func TestUnsupportedSettings(t *testing.T) {
	a, home := agentWithConfig(t, `Host a
    ProxyCommand none
Host b*
    User x

    ProxyJump gateway
Host *
    ProxyCommand false
`, SSHOptions{})
	file := filepath.Join(home, "config")
	if err := a.CheckHosts([]string{"a", "u@a"}); err != nil {
		t.Errorf("ProxyCommand none: %v", err)
	}
	want := "ssh config " + file + ":6: ProxyJump gateway for b1: mpirun's own ssh client cannot do this; use the system ssh: --launch-agent 'ssh %h'"
	if err := a.CheckHosts([]string{"a", "u@b1"}); err == nil || err.Error() != want {
		t.Errorf("ProxyJump: %v\nwant %s", err, want)
	}
	if _, err := a.resolve("c"); err == nil || !strings.Contains(err.Error(), file+":8: ProxyCommand false for c") {
		t.Errorf("ProxyCommand at launch: %v", err)
	}
}
