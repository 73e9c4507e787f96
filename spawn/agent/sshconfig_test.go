package agent

import (
	"net"
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
	if opts.SystemConfigFile == "" {
		opts.SystemConfigFile = "none" // not this machine's
	}
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
		alias: "node5", asked: query{"node5", "root"}, user: "root", hostname: "node5.cluster", port: "2222",
		identityFiles: []string{
			filepath.Join(home, ".ssh/id_root_node5.cluster"),
			filepath.Join(home, "keys/node5-2222"),
		},
		identitiesOnly: true,
		knownHosts:     []string{filepath.Join(home, "kh1"), "/etc/kh2"},
		strict:         strictAcceptNew,
		timeout:        3 * time.Second,
		network:        "tcp",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolve:\n got %+v\nwant %+v", got, want)
	}

	got, err = a.resolve("other")
	if err != nil {
		t.Fatal(err)
	}
	want = &target{
		alias: "other", asked: query{alias: "other"}, user: "eve", hostname: "other", port: "22",
		knownHosts: []string{filepath.Join(home, ".ssh/known_hosts")},
		strict:     strictYes, timeout: time.Minute, network: "tcp",
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

// writeFile writes text to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSystemConfig: the system file is read after the user's, the first
// value winning across both, IdentityFile adding up; its Include lines
// are followed, and a setting's place is named in the included file.
func TestSystemConfig(t *testing.T) {
	dir := t.TempDir()
	inc := writeFile(t, dir, "inc.conf", "\nHost node*\n  Port 2200\nHost node2\n  RemoteCommand echo\n")
	system := writeFile(t, dir, "ssh_config", "Include "+filepath.Join(dir, "*.conf")+`
Host *
  User sys
  HostName sys.example
  ConnectTimeout 7
  IdentityFile /sys/id
`)
	a, _ := agentWithConfig(t, "Host node1\n  HostName user.example\n  IdentityFile /user/id\n",
		SSHOptions{SystemConfigFile: system})
	got, err := a.resolve("node1")
	if err != nil {
		t.Fatal(err)
	}
	if got.hostname != "user.example" || got.user != "sys" || got.port != "2200" || got.timeout != 7*time.Second ||
		!reflect.DeepEqual(got.identityFiles, []string{"/user/id", "/sys/id"}) {
		t.Errorf("resolve: %+v", got)
	}
	want := "ssh config " + inc + ":5: RemoteCommand echo for node2: "
	if err := a.CheckHosts([]string{"node1", "node2"}); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckHosts: %v\nwant %s…", err, want)
	}
	if _, err := NewSSH(SSHOptions{SystemConfigFile: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a system file named but missing: want an error")
	}
}

// TestUnsupportedSettings: a setting the native client cannot honour is
// refused with its file and line, never ignored; harmless values pass.
func TestUnsupportedSettings(t *testing.T) {
	for _, tc := range []struct{ setting, host string }{
		{"CertificateFile ~/.ssh/id-cert.pub", "h"},
		{"HostKeyAlias other", "h"},
		{"Ciphers no-such-cipher", "h"},
		{"PubkeyAuthentication no", "h"},
		{"PreferredAuthentications password,keyboard-interactive", "h"},
		{"CanonicalizeHostname yes", "h"},
		{"BindAddress 10.0.0.1", "h"},
		{"ConnectionAttempts 3", "h"},
	} {
		a, home := agentWithConfig(t, "Host x\n  User y\nHost *\n  "+tc.setting+"\n", SSHOptions{})
		want := "ssh config " + filepath.Join(home, "config") + ":4: " + tc.setting + " for h: mpirun's own ssh client "
		err := a.CheckHosts([]string{tc.host})
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; use the system ssh: --launch-agent 'ssh %h'") {
			t.Errorf("%s: %v\nwant %s…", tc.setting, err, want)
		}
	}
	for _, harmless := range []string{
		"ForwardAgent no", "ForwardAgent yes", "PreferredAuthentications gssapi-with-mic,publickey", "RequestTTY auto",
		"GSSAPIAuthentication yes", "ControlMaster auto", "ProxyCommand none", "Match all\nUser z",
	} {
		a, _ := agentWithConfig(t, harmless+"\n", SSHOptions{})
		if err := a.CheckHosts([]string{"h"}); err != nil {
			t.Errorf("%s: %v", harmless, err)
		}
	}
}

// TestMatchRefused: a Match line the client cannot evaluate stops it at
// once, naming the file and line, also in an included file.
func TestMatchRefused(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	user := writeFile(t, dir, "user", "Host a\n  User b\n\nMatch user bob canonical\n  Port 1\n")
	_, err := NewSSH(SSHOptions{ConfigFile: user, SystemConfigFile: "none"})
	want := "ssh config " + user + ":4: Match user bob canonical: mpirun's own ssh client cannot evaluate canonical; use the system ssh: --launch-agent 'ssh %h'"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	for _, line := range []string{"Match tagged x", "Match exec", "Match host a all", "Match", `Match exec "true`, "Match exec %X"} {
		inc := writeFile(t, dir, "inc", "# match\n"+line+"\n")
		system := writeFile(t, dir, "system", "Include "+inc+"\n")
		_, err = NewSSH(SSHOptions{SystemConfigFile: system})
		if err == nil || !strings.HasPrefix(err.Error(), "ssh config "+inc+":2: "+line+": mpirun's own ssh client ") {
			t.Errorf("%s, included: %v", line, err)
		}
	}
}

// TestMatchEvaluated: Match blocks apply as OpenSSH's first pass applies
// them: host sees the HostName set before the block, user the user@ of
// the command line first, exec runs with the tokens expanded, '!' negates.
func TestMatchEvaluated(t *testing.T) {
	a, _ := agentWithConfig(t, `Host a
    User b
Match originalhost a user b
    Port 1001
Match host real-c
    Port 1002
Host c
    HostName real-c
Match host REAL-C
    Port 1003
Match !localuser nobody-here exec "test %n = d -a %p = 22"
    Port 1004
Match user zed originalhost e,f
    Port 1005
Match originalhost f,!g*
    Port 1006
Host *
    Port 22
`, SSHOptions{})
	for _, tc := range []struct{ host, port string }{
		{"a", "1001"}, {"c", "1003"}, {"d", "1004"}, {"zed@e", "1005"}, {"e", "22"}, {"f", "1006"}, {"g1", "22"},
	} {
		addr, err := a.Address(tc.host)
		if err != nil {
			t.Fatalf("%s: %v", tc.host, err)
		}
		if _, port, _ := net.SplitHostPort(addr); port != tc.port {
			t.Errorf("%s: port %s, want %s", tc.host, port, tc.port)
		}
	}
}

func TestPatternList(t *testing.T) {
	for _, tc := range []struct {
		list, s string
		fold    bool
		want    bool
	}{
		{"node*", "node12", false, true},
		{"node*,!node3", "node3", false, false},
		{"!node3", "node4", false, false}, // a negation alone matches nothing
		{"n?de", "node", false, true},
		{"n?de", "nde", false, false},
		{"*.example.com", "a.b.example.com", false, true},
		{"NODE*", "node1", true, true},
		{"Bob", "bob", false, false},
		{"a,b , c", "c", false, true},
	} {
		if got := matchList(tc.list, tc.s, tc.fold); got != tc.want {
			t.Errorf("matchList(%q, %q) = %v, want %v", tc.list, tc.s, got, tc.want)
		}
	}
}

// TestProxySettings: ProxyCommand and ProxyJump, whichever comes first, as
// OpenSSH; tokens expanded; "none" is no proxy.
func TestProxySettings(t *testing.T) {
	a, _ := agentWithConfig(t, `Host a
    ProxyCommand none
Host b*
    User x
    ProxyJump gw,u@[::1]:2022
Host c
    HostName c.example
    Port 23
    ProxyCommand nc %h %p %r %n %%
Host *
    ProxyJump never
    ProxyCommand false
`, SSHOptions{})
	for host, want := range map[string][2]any{
		"a":  {"", []string(nil)},
		"b1": {"", []string{"gw", "u@[::1]:2022"}},
		"c":  {"nc c.example 23 " + localUser() + " c %", []string(nil)},
		"d":  {"", []string{"never"}},
	} {
		got, err := a.resolve(host)
		if err != nil {
			t.Errorf("%s: %v", host, err)
			continue
		}
		if got.proxyCommand != want[0] || !reflect.DeepEqual(got.jumps, want[1]) {
			t.Errorf("%s: ProxyCommand %q, ProxyJump %q; want %q", host, got.proxyCommand, got.jumps, want)
		}
	}
}

func TestParseJump(t *testing.T) {
	for hop, want := range map[string][3]string{
		"gw":                 {"", "gw", ""},
		"u@gw:2022":          {"u", "gw", "2022"},
		"ssh://u@gw:22":      {"u", "gw", "22"},
		"[::1]:23":           {"", "::1", "23"},
		"fe80::1":            {"", "fe80::1", ""},
		"a@b@host":           {"a@b", "host", ""},
		"[2001:db8::1]":      {"", "2001:db8::1", ""},
		"u@10.0.0.1":         {"u", "10.0.0.1", ""},
		"ssh://gw.example:1": {"", "gw.example", "1"},
	} {
		u, h, p, err := parseJump(hop)
		if err != nil || [3]string{u, h, p} != want {
			t.Errorf("%s: %q %q %q %v; want %q", hop, u, h, p, err, want)
		}
	}
	for _, bad := range []string{"", "u@", "gw:0", "gw:x", "gw:70000"} {
		if _, _, _, err := parseJump(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestEnvSent(t *testing.T) {
	patterns := []string{"LANG", "LC_*", "-LC_ALL", "X?"}
	for name, want := range map[string]bool{
		"LANG": true, "LC_TIME": true, "LC_ALL": false, "XY": true, "XYZ": false, "PATH": false,
	} {
		if got := envSent(patterns, name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
