package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"prsh/daemon/protocol"
	"prsh/transport"
)

// TestBadUsage: orted started by hand, or by a parent that got its argv
// wrong, says what it needs and exits 255, which the parent reports with
// this line.
func TestBadUsage(t *testing.T) {
	orted := filepath.Join(t.TempDir(), "orted")
	if out, err := exec.Command("go", "build", "-o", orted, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cases := map[string][]string{
		"no flags":      nil,
		"no parent":     {"--id", "1", "--node", "n1"},
		"id of mpirun":  {"--parent", "tcp://127.0.0.1:1", "--id", "0", "--node", "n1"},
		"unknown flag":  {"--parent", "tcp://127.0.0.1:1", "--id", "1", "--node", "n1", "--secret", "x"},
		"stray operand": {"--parent", "tcp://127.0.0.1:1", "--id", "1", "--node", "n1", "extra"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(orted, append(ours(), args...)...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 255 {
				t.Errorf("exit %d, want 255; output:\n%s", code, out)
			}
			if !strings.Contains(string(out), "orted") || len(out) == 0 {
				t.Errorf("output does not name orted:\n%s", out)
			}
		})
	}
	cmd := exec.Command(orted, append(ours(), "--parent", "tcp://127.0.0.1:1", "--id", "1", "--node", "n1")...)
	cmd.Stdin = strings.NewReader("not a secret\n")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 255 || !strings.Contains(string(out), "orted: stdin does not start with a job secret") {
		t.Errorf("without a secret: exit %d, output:\n%s", code, out)
	}
}

// ours is the protocol flag of a parent of this orted's version.
func ours() []string { return []string{"--protocol", strconv.Itoa(protocol.Version)} }

// TestOtherVersion: under a parent of another prsh version, or one too old
// to give its version, orted refuses to start, saying so, before it calls
// back: the parent names the node with this line.
func TestOtherVersion(t *testing.T) {
	orted := filepath.Join(t.TempDir(), "orted")
	if out, err := exec.Command("go", "build", "-o", orted, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rest := []string{"--parent", "tcp://127.0.0.1:1", "--id", "1", "--node", "n1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"--protocol", "999"}, rest...), fmt.Sprintf("orted: its parent speaks protocol version 999 and this orted (%s) version %d: install the same prsh on every node\n", orted, protocol.Version)},
		{append([]string{"-protocol=1"}, rest...), fmt.Sprintf("orted: its parent speaks protocol version 1 and this orted (%s) version %d: install the same prsh on every node\n", orted, protocol.Version)},
		{rest, fmt.Sprintf("orted: its parent gave no protocol version (it is a prsh older than this orted, %s, which speaks version %d): install the same prsh on every node\n", orted, protocol.Version)},
	} {
		cmd := exec.Command(orted, tc.args...)
		cmd.Stdin = strings.NewReader("")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 255 || string(out) != tc.want {
			t.Errorf("%v: exit %d, output:\n%s\nwant 255 and:\n%s", tc.args, code, out, tc.want)
		}
	}
}

// TestCallbackTimeout: an orted whose parent admits it but never sends
// the job gives up after the callback timeout it was started with, and
// says so; a timeout that cannot work is refused at once.
func TestCallbackTimeout(t *testing.T) {
	orted := filepath.Join(t.TempDir(), "orted")
	if out, err := exec.Command("go", "build", "-o", orted, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	secret, err := transport.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := transport.Listen("127.0.0.1:0", secret, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go ln.Accept(context.Background()) // admitted, never welcomed

	start := func(timeout string) (int, string) {
		cmd := exec.Command(orted, append(ours(), "--parent", transport.URI(ln.Addr()), "--id", "1", "--node", "n1", "--timeouts", "callback="+timeout)...)
		lifeline, err := cmd.StdinPipe() // held open: the parent is alive
		if err != nil {
			t.Fatal(err)
		}
		defer lifeline.Close()
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(lifeline, "%x\n", secret)
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), out.String()
	}
	code, out := start("700ms")
	if want := "orted: n1: waiting for the job from parent: no job within twice the callback timeout (1.4s)"; code != 255 || !strings.Contains(out, want) {
		t.Errorf("exit %d, output:\n%s\nwant 255 and %q", code, out, want)
	}
	code, out = start("0s")
	if want := "orted: --timeouts: timeout callback must be positive, not 0s"; code != 255 || !strings.Contains(out, want) {
		t.Errorf("exit %d, output:\n%s\nwant 255 and %q", code, out, want)
	}
}

// TestSlurmStep: an orted of a job step (--slurm-step) is the node
// SLURMD_NODENAME says and finds its id in the table after the secret;
// outside a step, or on a node the table lacks, it says why and exits
// 255. Its first line names its node.
func TestSlurmStep(t *testing.T) {
	orted := filepath.Join(t.TempDir(), "orted")
	if out, err := exec.Command("go", "build", "-o", orted, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	secret := strings.Repeat("ab", transport.SecretSize) + "\n"
	for _, tc := range []struct {
		name, node, stdin, want string
	}{
		{"outside a step", "", secret, "orted: --slurm-step outside a Slurm job step (SLURMD_NODENAME is not set)"},
		{"not in the table", "node9", secret + "2 node2 3 node3\n", "orted: alive on node9\norted: node node9 is not among the job step's hosts (node[2-3])"},
		{"no table", "node2", secret, "orted: alive on node2\norted: reading the job step's hosts table from stdin: EOF"},
		{"with --id", "node2", secret, "orted: --slurm-step replaces --id and --node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(ours(), "--parent", "tcp://127.0.0.1:1", "--slurm-step")
			if tc.name == "with --id" {
				args = append(args, "--id", "2")
			}
			cmd := exec.Command(orted, args...)
			cmd.Env = []string{"SLURMD_NODENAME=" + tc.node}
			cmd.Stdin = strings.NewReader(tc.stdin)
			out, _ := cmd.CombinedOutput()
			got := strings.TrimSpace(string(out))
			if code := cmd.ProcessState.ExitCode(); code != 255 || got != tc.want {
				t.Errorf("exit %d, output:\n%s\nwant 255 and\n%s", code, got, tc.want)
			}
		})
	}
}
