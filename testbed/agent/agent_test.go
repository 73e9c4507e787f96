package agent

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"prsh/testbed/nodes"
)

func TestConfigRoundTrip(t *testing.T) {
	want := Config{Block: 3, Nodes: 256, User: "root", RunID: "abc", Latency: 100 * time.Millisecond,
		SpawnCost: 50 * time.Millisecond, UTS: true, Locks: "/tmp/x/locks", Env: []string{"A=1", "PATH=/a b:/c"}}
	path := filepath.Join(t.TempDir(), "agent.conf")
	if err := want.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %+v, wrote %+v", got, want)
	}
}

// TestSessionEnv: the node's own address in SSH_CONNECTION (where orted
// listens), the spawner's as the client, the node's name, the config.
func TestSessionEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.conf")
	cfg := Config{Block: 2, Nodes: 300, User: "u", RunID: "r1", Env: []string{"X=1"}}
	if err := cfg.Write(path); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvConfig, path)
	t.Setenv(nodes.EnvNode, "node001")
	s, err := newSession([]string{"127.2.1.1", "echo", "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if s.host != "node251" || s.command != "echo hi" || s.spawner != "node001" {
		t.Errorf("session %+v", s)
	}
	env := strings.Join(s.env, "\n")
	for _, want := range []string{"\nX=1\n", "SSH_CONNECTION=127.2.0.1 0 127.2.1.1 22", "PRSH_TESTBED_NODE=node251",
		"PRSH_TESTBED_RUN=r1", EnvConfig + "=" + path} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if _, err := newSession([]string{"node301", "true"}); err == nil || !strings.Contains(err.Error(), "node301: no such node") {
		t.Errorf("unknown node: %v", err)
	}
}
