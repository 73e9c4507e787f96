package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hang is the generous bound that turns a hang into a failure; no test
// asserts anything about how fast something happens.
const hang = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	return ctx
}

// waitFor calls p.Wait, failing the test if it does not return in time (and
// then closing p, which ends the Wait).
func waitFor(t *testing.T, p Process) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- p.Wait() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(hang):
		t.Errorf("Wait did not return within %s", hang)
		p.Close()
		return <-errc
	}
}

// closeAndWait closes p and returns its Wait result.
func closeAndWait(t *testing.T, p Process) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(hang):
		t.Fatalf("Close did not return within %s", hang)
	}
	return waitFor(t, p)
}

// wantExit checks that err is an *ExitError with status and a stderr tail
// containing stderr.
func wantExit(t *testing.T, err error, status int, stderr string) *ExitError {
	t.Helper()
	var xe *ExitError
	if !errors.As(err, &xe) {
		t.Fatalf("got %v (%T), want an *ExitError", err, err)
	}
	if xe.Status != status || !strings.Contains(xe.Stderr, stderr) {
		t.Errorf("got status %d stderr %q, want %d and %q", xe.Status, xe.Stderr, status, stderr)
	}
	return xe
}

// wantErr checks that err's message contains every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// waitFile polls until path exists and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for end := time.Now().Add(hang); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
	}
	t.Fatalf("%s did not appear within %s", path, hang)
	return ""
}

// checkLifeline launches a command that records the payload it reads,
// then waits for EOF: the payload must arrive, stdin must stay open until
// Close, and Close must end the command. It returns the closed process.
func checkLifeline(t *testing.T, a Agent, host string) Process {
	t.Helper()
	dir := t.TempDir()
	script := `read s; echo "$s" > ` + dir + `/got; cat >/dev/null; echo eof > ` + dir + `/eof`
	p, err := a.Start(testCtx(t), host, []string{"sh", "-c", script}, []byte("payload\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, filepath.Join(dir, "got")); got != "payload\n" {
		t.Errorf("payload = %q", got)
	}
	assertRunning(t, p, filepath.Join(dir, "eof"))
	if err := closeAndWait(t, p); err != nil {
		t.Errorf("Wait after Close: %v", err)
	}
	waitFile(t, filepath.Join(dir, "eof"))
	return p
}

// checkKill launches a command that stops itself (SIGSTOP), as a hung
// daemon would be: closing its stdin cannot end it, Kill must. Wait then
// reports the signal KILL, and the command is gone.
func checkKill(t *testing.T, a Agent, host string) {
	t.Helper()
	dir := t.TempDir()
	script := `echo $$ > ` + dir + `/pid; kill -STOP $$; echo resumed > ` + dir + `/resumed`
	p, err := a.Start(testCtx(t), host, []string{"sh", "-c", script}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, filepath.Join(dir, "pid"))))
	t.Cleanup(func() {
		if procState(pid) != "" {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for end := time.Now().Add(hang); procState(pid) != "T"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			p.Close()
			t.Fatalf("the command (pid %d) did not stop within %s", pid, hang)
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.Kill() }()
	select {
	case <-done:
	case <-time.After(hang):
		t.Fatalf("Kill did not return within %s", hang)
	}
	if xe := wantExit(t, waitFor(t, p), 128+9, ""); xe.Signal != "KILL" {
		t.Errorf("Wait: %v, want the signal KILL", xe)
	}
	if state := procState(pid); state != "" {
		t.Errorf("the command (pid %d) is still there after Kill, state %s", pid, state)
	}
}

// procState is the state letter of /proc/pid/stat, "" if pid is gone or
// a zombie.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[0]
}
