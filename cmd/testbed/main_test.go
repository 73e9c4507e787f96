package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"prsh/testbed"
)

// patience turns a hang into a failure; it is not a performance bound.
const patience = 20 * time.Second

// cliEnv makes the test binary behave as the testbed command, so that
// tests can signal a real testbed process without building one.
const cliEnv = "PRSH_TESTBED_TEST_AS_CLI"

func TestMain(m *testing.M) {
	testbed.MaybeRunUTSHelper()
	if os.Getenv(cliEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// runMain runs the CLI in-process and returns its status and output.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"testbed"}, args...), nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunExitStatus(t *testing.T) {
	code, _, errOut := runMain(t, "run", "--nodes", "3", "--", "sh", "-c", "exit 3")
	if code != 3 {
		t.Errorf("status %d, want 3 (stderr %q)", code, errOut)
	}
}

func TestRunSignalDeath(t *testing.T) {
	code, _, errOut := runMain(t, "run", "--nodes", "1", "--", "sh", "-c", "kill -9 $$")
	if code != 128+9 {
		t.Errorf("status %d, want 137 (stderr %q)", code, errOut)
	}
}

func TestRunNotFound(t *testing.T) {
	code, _, errOut := runMain(t, "run", "--nodes", "1", "--", "no-such-command-prsh")
	if code != exitNotFound || !strings.Contains(errOut, "not found") {
		t.Errorf("status %d stderr %q, want 127 and 'not found'", code, errOut)
	}
}

func TestRunEnvironment(t *testing.T) {
	code, out, errOut := runMain(t, "run", "--nodes", "2", "--slots", "3", "--",
		"sh", "-c", `cat "$MPIRUN_HOSTFILE"; test -s "$MPIRUN_SSH_CONFIG" && test -n "$PRSH_TESTBED_RUN" && echo "$PATH"`)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, errOut)
	}
	exe, _ := os.Executable()
	want := "node001 slots=3\nnode002 slots=3\n" + filepath.Dir(exe) + ":"
	if !strings.HasPrefix(out, want) {
		t.Errorf("stdout %q, want prefix %q", out, want)
	}
}

func TestRunBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--nodes", "2"},
		{"run", "--nodes", "2", "--kill-after", "node001", "--", "true"},
		{"run", "--nodes", "2", "--refuse", "node009", "--", "true"},
		{"run", "--nodes", "2", "--max-startups", "node001=0", "--", "true"},
		{"run", "--nodes", "2", "--max-startups", "node001", "--", "true"},
		{"run", "--nodes", "2", "--max-startups", "node009=2", "--", "true"},
		{"up", "--nodes", "2", "extra"},
	} {
		if code, _, _ := runMain(t, args...); code != exitFailure {
			t.Errorf("%q: status %d, want %d", args, code, exitFailure)
		}
	}
}

var leftoverLine = regexp.MustCompile(`testbed: left running (on node\d+|locally): pid (\d+): (.*)`)

// checkLeftover asserts that stderr reports exactly one leftover matching
// where and cmdline, and that it has been killed.
func checkLeftover(t *testing.T, errOut, where, cmdline string) {
	t.Helper()
	m := leftoverLine.FindAllStringSubmatch(errOut, -1)
	if len(m) != 1 || m[0][1] != where || m[0][3] != cmdline {
		t.Fatalf("stderr %q, want one leftover %s: %s", errOut, where, cmdline)
	}
	pid, _ := strconv.Atoi(m[0][2])
	if alive(pid) {
		t.Errorf("leftover pid %d still alive", pid)
	}
}

// alive reports whether pid runs and is not a zombie (orphans here may be
// reparented to an init that does not reap).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}

func TestRunLocalLeftover(t *testing.T) {
	code, _, errOut := runMain(t, "run", "--nodes", "1", "--leftover-grace", "100ms", "--",
		"sh", "-c", "sleep 31 </dev/null >/dev/null 2>&1 &")
	if code != exitFailure {
		t.Errorf("status %d, want %d", code, exitFailure)
	}
	checkLeftover(t, errOut, "locally", "sleep 31")
}

func TestRunNodeLeftover(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client on PATH")
	}
	code, _, errOut := runMain(t, "run", "--nodes", "3", "--leftover-grace", "100ms", "--",
		"sh", "-c", `ssh -F "$MPIRUN_SSH_CONFIG" node002 'sleep 32 </dev/null >/dev/null 2>&1 &'`)
	if code != exitFailure {
		t.Errorf("status %d, want %d", code, exitFailure)
	}
	checkLeftover(t, errOut, "on node002", "sleep 32")
}

// startCLI runs the test binary as the testbed command and returns it with
// a reader on the given stream ("stdout" or "stderr").
func startCLI(t *testing.T, stream string, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	cmd.WaitDelay = patience
	var r io.Reader
	var err error
	if stream == "stdout" {
		r, err = cmd.StdoutPipe()
	} else {
		r, err = cmd.StderrPipe()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(r)
}

// waitLine reads lines until one contains want, or fails after patience.
func waitLine(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for {
			line, err := r.ReadString('\n')
			if strings.Contains(line, want) || err != nil {
				got <- line
				io.Copy(io.Discard, r)
				return
			}
		}
	}()
	select {
	case line := <-got:
		if !strings.Contains(line, want) {
			t.Fatalf("output ended before %q", want)
		}
		return line
	case <-time.After(patience):
		t.Fatalf("no %q within %v", want, patience)
	}
	return ""
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(patience):
		t.Fatal("testbed did not exit")
	}
	return -1
}

func TestRunForwardsSignals(t *testing.T) {
	cmd, out := startCLI(t, "stdout", "run", "--nodes", "1", "--", "sh", "-c",
		`trap 'echo got USR1' USR1; trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done`)
	waitLineKeep(t, out, "ready")
	cmd.Process.Signal(syscall.SIGUSR1)
	waitLineKeep(t, out, "got USR1")
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 42 {
		t.Errorf("status %d, want 42 (CMD's, after a forwarded SIGTERM)", code)
	}
}

// waitLineKeep is waitLine for a reader that is read again afterwards.
func waitLineKeep(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				got <- err
				return
			}
			if strings.Contains(line, want) {
				got <- nil
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
	case <-time.After(patience):
		t.Fatalf("no %q within %v", want, patience)
	}
}

func TestUp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	cmd, errs := startCLI(t, "stderr", "up", "--nodes", "2", "--dir", dir)
	waitLine(t, errs, "try: ssh -F "+filepath.Join(dir, "ssh_config")+" node001 hostname")
	out, err := sshRun(t, dir, "node002", `echo "$PRSH_TESTBED_NODE"`)
	if err != nil || out != "node002\n" {
		t.Errorf("node002: %q %v", out, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("status %d after SIGINT, want 0", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "hostfile")); err != nil {
		t.Errorf("--dir files removed: %v", err)
	}
}

// sshRun runs cmd on node with the Go ssh client, using the files in dir.
func sshRun(t *testing.T, dir, node, cmd string) (string, error) {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(dir, "id_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := knownhosts.New(filepath.Join(dir, "known_hosts"))
	if err != nil {
		t.Fatal(err)
	}
	addr := hostPort(t, filepath.Join(dir, "ssh_config"), node)
	user := regexp.MustCompile(`User (\S+)`).FindSubmatch(readFile(t, filepath.Join(dir, "ssh_config")))
	cl, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User: string(user[1]), Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hk, Timeout: patience,
	})
	if err != nil {
		return "", err
	}
	defer cl.Close()
	sess, err := cl.NewSession()
	if err != nil {
		return "", err
	}
	out, err := sess.Output(cmd)
	return string(out), err
}

// hostPort finds node's HostName and Port in an ssh_config.
func hostPort(t *testing.T, path, node string) string {
	t.Helper()
	re := regexp.MustCompile(`Host ` + node + `\n\s+HostName (\S+)\n\s+Port (\d+)`)
	m := re.FindSubmatch(readFile(t, path))
	if m == nil {
		t.Fatalf("%s not in %s", node, path)
	}
	return net.JoinHostPort(string(m[1]), string(m[2]))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSim: a simulated launch prints its milestones and exits 0; a
// refused node ends it with mpirun's line and status; a sweep writes its
// table and its CSV (the lab's TestSweepPlot draws one).
func TestSim(t *testing.T) {
	code, out, errOut := runMain(t, "sim", "--nodes", "50", "--spawn-degree", "4")
	if code != 0 || !strings.Contains(out, "phase 1 (daemons spawned)") || errOut != "" {
		t.Errorf("sim: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runMain(t, "sim", "--nodes", "50", "--spawn-degree", "auto", "--cores", "2", "--orted-cpu", "100ms", "--rank-cpu", "30ms", "--idle-cpu", "0.002")
	if code != 0 || !strings.Contains(out, "δ=auto(") {
		t.Errorf("sim δ auto on 2 cores: status %d, stdout %q", code, out)
	}
	code, out, _ = runMain(t, "sim", "--nodes", "50", "--spawn-degree", "8", "--cores", "2", "--orted-cpu", "100ms", "--rank-cpu", "30ms",
		"--idle-cpu", "orted=1.2,guard=0.5,mpirun=1", "--idle-per-load", "orted=0.001")
	if code != 0 || !strings.Contains(out, "CPU of waiting processes       mpirun ") || !strings.Contains(out, ", orted ") || !strings.Contains(out, ", guard ") {
		t.Errorf("sim with idle costs by kind: status %d, stdout %q", code, out)
	}
	code, _, errOut = runMain(t, "sim", "--nodes", "50", "--fail", "node017=refuse")
	if want := "mpirun: node017: ssh: dial tcp node017:22: connect: connection refused\n"; code != 255 || errOut != want {
		t.Errorf("sim --fail node017=refuse: status %d, stderr %q; want 255 and %q", code, errOut, want)
	}
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "sweep.csv")
	code, out, errOut = runMain(t, "sim", "--nodes", "20,40", "--spawn-degree", "2,flat", "--csv", csvPath)
	if code != 0 || strings.Count(out, "\n") < 5 {
		t.Fatalf("sweep: status %d, stdout %q, stderr %q; want a header and 4 rows", code, out, errOut)
	}
	if b, err := os.ReadFile(csvPath); err != nil || strings.Count(string(b), "\n") != 5 || !strings.Contains(string(b), "\n40,flat,") {
		t.Errorf("sweep CSV: %q, %v", b, err)
	}
	for _, bad := range [][]string{{"--nodes", "0"}, {"--spawn-degree", "wide"}, {"--fail", "node017=melt"}, {"--on-unreachable", "retry"}, {"--nodes", "50", "--fail", "node051=refuse"}, {"--cpu-share", "lifo"}, {"--cores", "-1"}, {"--idle-cpu", "sshd=1"}, {"--idle-per-load", "orted=-1"}} {
		if code, _, _ := runMain(t, append([]string{"sim"}, bad...)...); code != exitFailure {
			t.Errorf("sim %v: status %d, want %d", bad, code, exitFailure)
		}
	}
}
