package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"prsh/errmgr"
	"prsh/ranks/guard"
)

// TestOtherPrsh: a prsh-guard asked to guard by an orted of another
// prsh (another guard interface, or one from before its versions) runs
// nothing and says why on the rank's stderr; started by hand it says who
// starts it.
func TestOtherPrsh(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "prsh-guard")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct{ arg, says string }{
		{guard.GuardArgPrefix, "prsh-guard: " + binary + " is of another prsh than the orted that started it: install the same prsh on every node\n"},
		{guard.GuardArgPrefix + "-v1", "prsh-guard: " + binary + " is of another prsh than the orted that started it: install the same prsh on every node\n"},
		{"--help", "prsh-guard guards a rank of orted's; orted starts it, not you\n"},
	} {
		cmd := exec.Command(binary, tc.arg, "0", "/bin/echo", "echo", "the-command-ran")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != errmgr.StatusFailed || string(out) != tc.says {
			t.Errorf("%s: exit %d, output %q; want %d, %q", tc.arg, code, out, errmgr.StatusFailed, tc.says)
		}
		if strings.Contains(string(out), "the-command-ran") {
			t.Errorf("%s: the command ran", tc.arg)
		}
	}
	if !strings.HasPrefix(guard.GuardArg, guard.GuardArgPrefix) || guard.GuardArg == guard.GuardArgPrefix {
		t.Errorf("GuardArg %q does not extend %q with a version", guard.GuardArg, guard.GuardArgPrefix)
	}
}
