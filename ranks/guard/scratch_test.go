package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestScratchDirSweepsTheDead: a new scratch directory removes those of
// processes that are gone (or whose pid now names a later process), and
// keeps those of live ones, other prefixes' and other names.
func TestScratchDirSweepsTheDead(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	start, ok := startTime(os.Getpid())
	if !ok {
		t.Fatal("no start time of our own")
	}
	live := "prsh-x-" + self + "-" + strconv.FormatUint(start, 10) + "-1"
	dead := "prsh-x-" + strconv.Itoa(gone.Process.Pid) + "-1-2"
	reused := "prsh-x-" + self + "-" + strconv.FormatUint(start+1, 10) + "-3"
	kept := []string{live, "prsh-y-" + strconv.Itoa(gone.Process.Pid) + "-1-2", "prsh-x-notapid-1-2", "prsh-x-"}
	for _, name := range append([]string{dead, reused}, kept...) {
		if err := os.MkdirAll(filepath.Join(tmp, name, "inner"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := ScratchDir("prsh-x-", "a test directory")
	if err != nil {
		t.Fatal(err)
	}
	if owner, at, ok := scratchOwner(filepath.Base(dir), "prsh-x-"); !ok || owner != os.Getpid() || at != start {
		t.Errorf("new directory %s does not name this process (%d, started %d)", dir, os.Getpid(), start)
	}
	for _, name := range []string{dead, reused} {
		if _, err := os.Stat(filepath.Join(tmp, name)); !os.IsNotExist(err) {
			t.Errorf("%s of a process that is gone was not removed (%v)", name, err)
		}
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(tmp, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}

// TestScratchDirError: a directory that cannot be made is named by what
// it is for and where it was to be, with the system's cause.
func TestScratchDirError(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "missing")
	t.Setenv("TMPDIR", tmp)
	_, err := ScratchDir("prsh-x-", "a test directory")
	if want := "cannot make a test directory in " + tmp + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
