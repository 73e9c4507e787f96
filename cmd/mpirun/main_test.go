package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"prsh/modex/pmix"
	"prsh/testbed"
)

// This file is the part of e2e/main_test.go, e2e/helpers_test.go and
// e2e/programs_test.go that the end-to-end tests still in this package
// (env_test.go, flags_test.go) need; they and it go to e2e/ once the
// refactoring of this package's tests settles.

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
	builds := [][]string{{"-o", dir + "/", "prsh/cmd/mpirun", "prsh/cmd/orted", "prsh/cmd/prsh-guard"}}
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

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func itoa(i int) string { return fmt.Sprint(i) }

// checkOneLine checks that stderr is exactly one line matching pattern, or
// empty when pattern is "".
func checkOneLine(t *testing.T, stderr, pattern string) {
	t.Helper()
	got := lines(stderr)
	if pattern == "" {
		if len(got) != 0 {
			t.Errorf("stderr not empty:\n%s", stderr)
		}
		return
	}
	if len(got) != 1 || !regexp.MustCompile(pattern).MatchString(got[0]) {
		t.Errorf("stderr:\n%s\nwant one line matching %s", stderr, pattern)
	}
}

// wantSet checks the lines of text, in any order.
func wantSet(t *testing.T, text string, want ...string) {
	t.Helper()
	got := map[string]int{}
	for _, l := range lines(text) {
		got[l]++
	}
	for _, w := range want {
		if got[w] != 1 {
			t.Errorf("line %q seen %d times in:\n%s", w, got[w], text)
		}
		delete(got, w)
	}
	for l := range got {
		t.Errorf("unexpected line %q", l)
	}
}

// errMissing says a compiler or library the C test programs need is not
// installed.
var errMissing = errors.New("not installed")

// testProgram returns the path of program name from a set compiled by
// programs: skipped (saying why) when what it needs is missing, failed
// when it does not compile.
func testProgram(t testing.TB, programs func() (string, error), why, name string) string {
	t.Helper()
	dir, err := programs()
	if err == errMissing {
		t.Skip(why)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// compileC builds each C source matching pattern into dir with cc: pre,
// then -o and the source, then post (the libraries).
func compileC(dir, pattern, cc string, pre, post []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sources, _ := filepath.Glob(pattern)
	for _, src := range sources {
		out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
		args := append(append(slices.Clone(pre), "-o", out, src), post...)
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", src, err, b)
		}
	}
	return nil
}

// checkLines checks that text holds exactly the wanted lines, in any order.
func checkLines(t *testing.T, text string, want []string) {
	t.Helper()
	got := lines(text)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("output:\n%s\nwant (in any order):\n%s", text, strings.Join(want, "\n"))
	}
}

// openMPIPrograms compiles the MPI programs of e2e/testdata/mpi with Open
// MPI's compiler, and the PMIx programs of e2e/testdata/pmix against the PMIx
// client library, once.
var openMPIPrograms = sync.OnceValues(func() (string, error) {
	cc, err := exec.LookPath("mpicc.openmpi")
	if err != nil {
		return "", errMissing
	}
	dir := filepath.Join(bin, "openmpi")
	if err := compileC(dir, "../../e2e/testdata/mpi/*.c", cc, []string{"-O2"}, nil); err != nil {
		return "", err
	}
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "pmix").Output()
	if err != nil {
		return "", errMissing
	}
	f := strings.Fields(string(flags))
	return dir, compileC(dir, "../../e2e/testdata/pmix/*.c", "cc", append([]string{"-O2", "-Wall"}, f...), f)
})

// openMPI returns the path of a compiled Open MPI (or PMIx) test program,
// skipping the test when Open MPI or PMIx is not installed (.ci/run
// installs them) or the testbed cannot give each node its own hostname:
// Open MPI names its shared-memory segments after the host, so emulated
// nodes that share one would share segments too.
func openMPI(t *testing.T, name string) string {
	t.Helper()
	if !pmix.Available {
		t.Skip("built without PMIx (TestOpenMPIWithoutPMIx covers this build)")
	}
	if os.Geteuid() != 0 {
		t.Skip("Open MPI on the testbed needs a hostname per node (UTS namespaces: root)")
	}
	return testProgram(t, openMPIPrograms, "Open MPI or PMIx is not installed (apt-get install openmpi-bin libopenmpi-dev libpmix-dev)", name)
}
