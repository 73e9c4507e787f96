package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

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

// TestUnreadStdout: mpirun's stdout is a pipe nobody reads, so every
// output stream up the tree is full. Signals still reach the ranks (control
// traffic does not queue behind output), and Ctrl-C still ends the job:
// once, after the drain timeout, saying why; twice, at once.
func TestUnreadStdout(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	rank := `trap 'echo got USR1 > "$MARKS/usr1.$PRSH_RANK"' USR1; touch "$MARKS/$PRSH_RANK"; yes & while :; do sleep 1; done`
	for _, interrupts := range []int{1, 2} {
		t.Run(fmt.Sprintf("interrupts=%d", interrupts), func(t *testing.T) {
			unread, stdout, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer unread.Close()
			cmd, stderr, marks := startedTo(t, c, stdout, 4, "-np", "4", "--stdin", "none", "sh", "-c", rank)
			stdout.Close()
			waitPipeFull(t, unread)
			cmd.Process.Signal(syscall.SIGUSR1)
			for r := range 4 {
				waitFile(t, filepath.Join(marks, fmt.Sprintf("usr1.%d", r)))
			}
			cmd.Process.Signal(syscall.SIGINT)
			if interrupts == 2 {
				stderr.waitFor(t, "caught SIGINT")
				cmd.Process.Signal(syscall.SIGINT)
			}
			if status := waitExit(t, cmd); status != 130 {
				t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
			}
			want := []string{"mpirun: caught SIGINT, terminating the job"}
			if interrupts == 1 {
				want = append(want, "mpirun: gave up waiting for node001, node002 to finish: their ranks' output waits for mpirun's stdout or stderr to be read")
			}
			if got := lines(stderr.String()); !slices.Equal(got, want) {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, strings.Join(want, "\n"))
			}
			if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
				t.Fatalf("left running: %+v", left)
			}
		})
	}
}

// waitPipeFull waits until the pipe holds 64 KiB unread, Linux's default
// pipe capacity: its writer is blocked.
func waitPipeFull(t *testing.T, r *os.File) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		if n >= 64<<10 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pipe holds %d bytes after a minute, want 64 KiB", n)
		}
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
