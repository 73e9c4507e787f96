// Package e2e runs the built mpirun and orted on the testbed's emulated
// nodes; README.md is the catalogue of its files and tests.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"prsh/job/plan"
	"prsh/modex/pmix"
	"prsh/testbed"
)

// statusUsage is mpirun's exit status for a usage error, as cmd/mpirun
// defines it: what a user sees from outside.
const statusUsage = 2

// pmixSuffix names the orted built with the PMIx server (orted-pmix),
// which mpirun looks for beside orted.
const pmixSuffix = plan.PMIxSuffix

// bin holds mpirun and orted, built once for the end-to-end tests.
var bin string

// raceLogs is where race-detector builds of mpirun and orted write their
// reports (GORACE log_path), so a race in a daemon fails the test that
// ran it even when the daemon's exit status is not looked at.
var raceLogs string

func TestMain(m *testing.M) {
	testbed.MaybeRunUTSHelper()
	dir, err := os.MkdirTemp("", "prsh-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	raceLogs = filepath.Join(dir, "race")
	os.Setenv("GORACE", "atexit_sleep_ms=0 log_path="+filepath.Join(raceLogs, "report"))
	os.Mkdir(raceLogs, 0o755)
	if err := build(dir, raceEnabled, pmix.Available); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles the daemons with the race detector when the tests have
// it, so that races in mpirun and orted fail the suite too, as make bin
// does: orted without the PMIx server and, withPMIx, orted-pmix with it.
func build(dir string, race, withPMIx bool) error {
	args := []string{"build"}
	if race {
		args = append(args, "-race")
	}
	builds := [][]string{{"-o", dir + "/", "prsh/cmd/mpirun", "prsh/cmd/orted", "prsh/cmd/prsh-guard",
		"prsh/cmd/prte", "prsh/cmd/prun", "prsh/cmd/pterm"}}
	if withPMIx {
		builds = append(builds, []string{"-tags", "pmix", "-o", filepath.Join(dir, "orted"+pmixSuffix), "prsh/cmd/orted"})
	}
	for _, b := range builds {
		out, err := exec.Command("go", append(args, b...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	return nil
}

// cluster starts an emulated cluster for one test.
func cluster(t *testing.T, cfg testbed.Config) *testbed.Cluster {
	t.Helper()
	cfg.Env = append(cfg.Env, "GORACE="+os.Getenv("GORACE"))
	c, err := testbed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		checkNoRaces(t)
	})
	return c
}

// checkNoRaces fails the test if a daemon reported a data race.
func checkNoRaces(t *testing.T) {
	t.Helper()
	reports, _ := filepath.Glob(filepath.Join(raceLogs, "report.*"))
	for _, r := range reports {
		b, _ := os.ReadFile(r)
		os.Remove(r)
		t.Errorf("a daemon reported a data race:\n%s", b)
	}
}

// result is what one mpirun run did.
type result struct {
	status int
	stdout string
	stderr string
}

// mpirun runs mpirun against the cluster and checks that nothing is left
// running on any node afterwards.
func mpirun(t *testing.T, c *testbed.Cluster, args ...string) result {
	t.Helper()
	return mpirunFrom(t, bin, c, args...)
}

// plainBin builds mpirun and orted without the race detector, for tests
// that measure them.
var plainBin = sync.OnceValues(func() (string, error) {
	if !raceEnabled {
		return bin, nil
	}
	dir := filepath.Join(bin, "plain")
	return dir, build(dir, false, pmix.Available)
})

// mpirunFrom runs the mpirun found in dir.
func mpirunFrom(t *testing.T, dir string, c *testbed.Cluster, args ...string) result {
	t.Helper()
	res := runMpirun(t, filepath.Join(dir, "mpirun"), append(os.Environ(), c.Env()...), args...)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("mpirun %v left processes running: %+v", args, left)
	}
	return res
}

// runMpirun runs an mpirun binary with env and collects what it did; a
// run that takes minutes is a hang.
func runMpirun(t *testing.T, path string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun %v hung; stderr:\n%s", args, stderr.String())
	}
	res := result{status: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if err != nil && res.status < 0 {
		t.Fatalf("mpirun %v: %v", args, err)
	}
	return res
}
