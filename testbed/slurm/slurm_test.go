package slurm

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// patience turns a hang into a failure; it is not a performance bound.
const patience = 60 * time.Second

func TestMain(m *testing.M) {
	MaybeRunHelper()
	os.Exit(m.Run())
}

// startCluster starts a cluster of nodes × cpus for the test, or skips it
// when this machine cannot run one; Close runs (and must succeed) at the end.
func startCluster(t *testing.T, nodes, cpus int) *Cluster {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("%v", err)
	}
	begin := time.Now()
	c, err := Start(Config{Nodes: nodes, CPUs: cpus, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("%d nodes idle after %v", nodes, time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		begin := time.Now()
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("closed in %v", time.Since(begin).Round(time.Millisecond))
	})
	return c
}

// run runs argv in the cluster and returns its standard output, failing
// the test if it fails.
func run(t *testing.T, c *Cluster, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cmd := c.Command(ctx, argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v\n%s%s", argv, err, out, stderr.String())
	}
	return string(out)
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}

func TestSallocSrunHostname(t *testing.T) {
	c := startCluster(t, 4, 2)
	got := sortedLines(run(t, c, "salloc", "-N", "4", "srun", "hostname"))
	want := []string{"node1", "node2", "node3", "node4"}
	if !slices.Equal(got, want) {
		t.Errorf("salloc -N 4 srun hostname printed %q, want %q", got, want)
	}
	if got := strings.TrimSpace(run(t, c, "hostname")); got != controllerName {
		t.Errorf("Command's hostname is %q, want %q", got, controllerName)
	}
}
