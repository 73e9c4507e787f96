package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTopologyCachePath: one file per boot and cpuset, in a directory
// only we may write; a directory others can write is refused.
func TestTopologyCachePath(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	path := topologyCache()
	if path == "" || !strings.HasSuffix(path, ".xml") || path != topologyCache() {
		t.Fatalf("cache path %q, then %q", path, topologyCache())
	}
	saveTopology(path, "<topology/>")
	if data, err := os.ReadFile(path); err != nil || string(data) != "<topology/>" {
		t.Errorf("saved %q (%v)", data, err)
	}
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if _, ok := privateDir(open); ok {
		t.Errorf("a world-writable %s was accepted", open)
	}
}

// TestInheritedTopologyDropped: another orted's cache setting is unset,
// the user's own is kept and turns the cache off.
func TestInheritedTopologyDropped(t *testing.T) {
	t.Setenv(envTopologyFile, "/tmp/prsh-topology-0/abc.xml")
	if dropInheritedTopology() {
		t.Error("an orted's setting counted as the user's")
	}
	if _, ok := os.LookupEnv(envTopologyFile); ok {
		t.Error("an orted's setting was inherited")
	}
	t.Setenv(envTopologyFile, "/etc/mytopo.xml")
	if !dropInheritedTopology() || os.Getenv(envTopologyFile) != "/etc/mytopo.xml" {
		t.Error("the user's setting was not kept")
	}
}
