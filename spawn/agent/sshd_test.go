package agent

import (
	"os"
	"testing"

	"prsh/internal/sshdtest"
)

// TestOpenSSH runs the native client against the real OpenSSH server.
// Skipped without /usr/sbin/sshd; CI installs openssh-server for it.
func TestOpenSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("SSH_AUTH_SOCK", "")
	a, err := NewSSH(SSHOptions{ConfigFile: srv.WriteConfig(t, "sshd"), SystemConfigFile: "none"})
	if err != nil {
		t.Fatal(err)
	}

	if err := run(t, a, "sshd", "echo", "hello"); err != nil {
		t.Errorf("echo hello: %v", err)
	}
	wantExit(t, run(t, a, "sshd", "sh", "-c", `echo "oops $1" >&2; exit 7`, "sh", "a b"), 7, "oops a b")
	wantExit(t, run(t, a, "sshd", "/x/orted", "--hnp"), 127, "/x/orted")

	// The lifeline: stdin stays open until Close.
	checkLifeline(t, a, "sshd")
}

// TestOpenSSHKill: Kill ends a stopped command through the real sshd,
// which honours the signal request for a user other than root. For root
// it refuses ("session signalling requires privilege separation": a root
// session runs without the privilege-separated child), so the test skips.
func TestOpenSSHKill(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("sshd refuses the signal request in a root session")
	}
	srv := sshdtest.Start(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("SSH_AUTH_SOCK", "")
	a, err := NewSSH(SSHOptions{ConfigFile: srv.WriteConfig(t, "sshd"), SystemConfigFile: "none"})
	if err != nil {
		t.Fatal(err)
	}
	checkKill(t, a, "sshd")
}
