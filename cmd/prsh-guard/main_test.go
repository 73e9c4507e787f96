package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"prsh/errmgr"
	"prsh/errmgr/proc"
)

// TestOtherPrsh: a prsh-guard asked to guard by an orted of another
// prsh (another guard interface, or one from before its versions) runs
// nothing and says why on the rank's stderr; started by hand it says who
// starts it.
func TestOtherPrsh(t *testing.T) {
	guard := filepath.Join(t.TempDir(), "prsh-guard")
	if out, err := exec.Command("go", "build", "-o", guard, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct{ arg, says string }{
		{proc.GuardArgPrefix, "prsh-guard: " + guard + " is of another prsh than the orted that started it: install the same prsh on every node\n"},
		{proc.GuardArgPrefix + "-v1", "prsh-guard: " + guard + " is of another prsh than the orted that started it: install the same prsh on every node\n"},
		{"--help", "prsh-guard guards a rank of orted's; orted starts it, not you\n"},
	} {
		cmd := exec.Command(guard, tc.arg, "0", "/bin/echo", "echo", "the-command-ran")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != errmgr.StatusFailed || string(out) != tc.says {
			t.Errorf("%s: exit %d, output %q; want %d, %q", tc.arg, code, out, errmgr.StatusFailed, tc.says)
		}
		if strings.Contains(string(out), "the-command-ran") {
			t.Errorf("%s: the command ran", tc.arg)
		}
	}
	if !strings.HasPrefix(proc.GuardArg, proc.GuardArgPrefix) || proc.GuardArg == proc.GuardArgPrefix {
		t.Errorf("GuardArg %q does not extend %q with a version", proc.GuardArg, proc.GuardArgPrefix)
	}
}
