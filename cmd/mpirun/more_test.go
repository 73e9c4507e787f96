package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"prsh/testbed"
)

// TestAuthenticationFails: a key the nodes do not accept ends the job with
// one line naming the node and the cause.
func TestAuthenticationFails(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	stranger := filepath.Join(dir, "id_stranger")
	os.WriteFile(stranger, pem.EncodeToMemory(block), 0o600)
	cfg, _ := os.ReadFile(c.SSHConfigPath())
	mine := strings.ReplaceAll(string(cfg), filepath.Join(c.Dir(), "id_ed25519"), stranger)
	if mine == string(cfg) {
		t.Fatal("the testbed's ssh_config names no IdentityFile to replace")
	}
	cfgPath := filepath.Join(dir, "ssh_config")
	os.WriteFile(cfgPath, []byte(mine), 0o600)
	t.Setenv("SSH_AUTH_SOCK", "")
	res := mpirun(t, c, "--ssh-config", cfgPath, "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node00[1-3]: ssh: authentication failed for `)
}

// TestSlowReader: when mpirun's stdout is read slowly, the ranks are slowed
// down instead of mpirun buffering their output, and nothing is lost.
func TestSlowReader(t *testing.T) {
	plain, err := plainBin()
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, testbed.Config{Nodes: 2})
	cmd := exec.Command(filepath.Join(plain, "mpirun"), "sh", "-c", "head -c 104857600 /dev/zero")
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	watch := watchRSS(filepath.Join(plain, "mpirun"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the reader is late: everything must wait for it
	h := sha256.New()
	n, _ := io.Copy(h, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	rss := watch()
	zeros := sha256.Sum256(make([]byte, 2*104857600))
	if n != 2*104857600 || !bytes.Equal(h.Sum(nil), zeros[:]) {
		t.Fatalf("got %d bytes (sha256 %x), want 200 MiB of zeros", n, h.Sum(nil))
	}
	if rss > rssBound {
		t.Errorf("mpirun peaked at %d MiB while its reader was slow, bound %d MiB", rss>>20, rssBound>>20)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}

// TestSecondInterrupt: a second Ctrl-C does not wait for the grace period
// of ranks that ignore SIGTERM. The grace is set far beyond waitExit's
// patience, so only the second interrupt can end the job in time.
func TestSecondInterrupt(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	cmd, stderr, _ := started(t, c, 3, "--stdin", "none", "--kill-grace", "1h", "sh", "-c", `trap "" TERM INT; touch "$MARKS/$PRSH_RANK"; while :; do sleep 1; done`)
	cmd.Process.Signal(syscall.SIGINT)
	stderr.waitFor(t, "caught SIGINT") // not one signal for two
	cmd.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmd); status != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}

// TestReaderGoesAway: `mpirun yes | head -1` ends like `yes | head -1`:
// mpirun dies of SIGPIPE (141 under pipefail), the reader got its line,
// and the ranks, which would print forever, are gone from every node.
func TestReaderGoesAway(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2})
	cmd := exec.Command("bash", "-c", `set -o pipefail; "$0" -np 6 yes | head -n 1`, filepath.Join(bin, "mpirun"))
	cmd.Env = append(os.Environ(), c.Env()...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	if status := cmd.ProcessState.ExitCode(); status != 141 {
		t.Errorf("exit %d, want 141 (SIGPIPE); stderr:\n%s", status, stderr.String())
	}
	if string(out) != "y\n" {
		t.Errorf("stdout %q, want one line \"y\"", out)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running after the reader went away: %+v", left)
	}
}
