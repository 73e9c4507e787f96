package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
			cmd := exec.Command(orted, args...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 255 {
				t.Errorf("exit %d, want 255; output:\n%s", code, out)
			}
			if !strings.Contains(string(out), "orted") || len(out) == 0 {
				t.Errorf("output does not name orted:\n%s", out)
			}
		})
	}
	cmd := exec.Command(orted, "--parent", "tcp://127.0.0.1:1", "--id", "1", "--node", "n1")
	cmd.Stdin = strings.NewReader("not a secret\n")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 255 || !strings.Contains(string(out), "orted: stdin does not start with a job secret") {
		t.Errorf("without a secret: exit %d, output:\n%s", code, out)
	}
}
