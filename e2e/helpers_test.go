package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func itoa(i int) string { return fmt.Sprint(i) }

func rankOf(line string) int {
	var r int
	fmt.Sscan(line, &r)
	return r
}

// lockedBuffer is written by exec's copying goroutines while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until s shows up in b.
func (b *lockedBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(b.String(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("mpirun did not print %q; stderr:\n%s", s, b)
		}
	}
}

// startMpirun starts mpirun against the cluster without waiting.
func startMpirun(t *testing.T, c *testbed.Cluster, args ...string) (*exec.Cmd, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	return startCommand(t, c, "mpirun", args...)
}

// startCommand starts one of the built commands (mpirun, prte, …) in the
// background.
func startCommand(t *testing.T, c *testbed.Cluster, command string, args ...string) (*exec.Cmd, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, command), args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdout, stderr
}

// started runs mpirun in the background and waits until every rank has
// written a line to a marker file.
func started(t *testing.T, c *testbed.Cluster, ranks int, args ...string) (*exec.Cmd, *lockedBuffer, string) {
	t.Helper()
	return startedTo(t, c, nil, ranks, args...)
}

// startedTo is started with mpirun's stdout going to stdout.
func startedTo(t *testing.T, c *testbed.Cluster, stdout *os.File, ranks int, args ...string) (*exec.Cmd, *lockedBuffer, string) {
	t.Helper()
	marks := filepath.Join(t.TempDir(), "marks")
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "mpirun"), append([]string{"-x", "MARKS"}, args...)...)
	cmd.Env = append(os.Environ(), append(c.Env(), "MARKS="+marks)...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(time.Minute)
	for {
		if n := countMarks(marks); n == ranks {
			return cmd, stderr, marks
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d ranks started; stderr:\n%s", countMarks(marks), ranks, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countMarks counts the ranks that left their mark; a rank writing its
// mark through a ".tmp" file has not finished yet.
func countMarks(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tmp") {
			n++
		}
	}
	return n
}

// waitExit waits for mpirun to end and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(time.Minute):
		t.Fatal("mpirun did not exit")
		return -1
	}
}

// ortedOf finds the pid of the orted running on a node.
func ortedOf(t *testing.T, c *testbed.Cluster, node string) int {
	t.Helper()
	for _, p := range c.Leftovers() {
		if p.Node == node && isOrted(strings.Fields(p.Cmdline)) {
			return p.PID
		}
	}
	t.Fatalf("no orted on %s", node)
	return 0
}

// isOrted tells an orted daemon (or orted-pmix) from the shell that
// started it and from the node's guard, which may run its binary too.
func isOrted(argv []string) bool {
	if len(argv) < 2 {
		return false
	}
	name := filepath.Base(argv[0])
	return (name == "orted" || name == "orted"+pmixSuffix) && slices.Contains(argv, "--parent")
}

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

// checkMpirunLine checks that mpirun itself wrote exactly one line, which
// matches pattern; the ranks may write their own.
func checkMpirunLine(t *testing.T, stderr, pattern string) {
	t.Helper()
	var ours []string
	for _, l := range lines(stderr) {
		if strings.HasPrefix(l, "mpirun:") {
			ours = append(ours, l)
		}
	}
	if len(ours) != 1 || !regexp.MustCompile(pattern).MatchString(ours[0]) {
		t.Errorf("mpirun's lines: %q, want one matching %s; stderr:\n%s", ours, pattern, stderr)
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

// markedPids reads the pids that ranks 0 to n-1 wrote to $MARKS/RANK
// (scripts write RANK.tmp, then rename it, so a file read is whole).
func markedPids(t *testing.T, marks string, n int) []int {
	t.Helper()
	var pids []int
	for r := range n {
		b, err := os.ReadFile(filepath.Join(marks, fmt.Sprint(r)))
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		fmt.Sscan(string(b), &pid)
		pids = append(pids, pid)
	}
	return pids
}

// stopAndContinue: Ctrl-Z (SIGTSTP to cmd, an mpirun) stops the ranks,
// then cmd; SIGCONT resumes them all.
func stopAndContinue(t *testing.T, cmd *exec.Cmd, ranks []int) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTSTP)
	waitState(t, ranks, "T")
	waitState(t, []int{cmd.Process.Pid}, "T")
	cmd.Process.Signal(syscall.SIGCONT)
	waitState(t, ranks, "SR")
	waitState(t, []int{cmd.Process.Pid}, "SR")
}

// interrupted sends mpirun Ctrl-C and checks that it ends as it should:
// status 130, the one line saying why, nothing left on any node.
func interrupted(t *testing.T, c *testbed.Cluster, cmd *exec.Cmd, stderr *lockedBuffer) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmd); status != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: caught SIGINT, terminating the job$`)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running after Ctrl-C: %+v", left)
	}
}
