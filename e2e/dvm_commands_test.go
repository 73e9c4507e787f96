package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/daemon/dvm"
	"prsh/testbed"
)

// Open MPI's names for a DVM's commands (prte, prun, pterm) and PRSH_DVM:
// the same command line and code as mpirun --dvm-start, --dvm, --dvm-stop.

// runAs runs one of the commands of bin with c's environment and, unless
// dvm is "", PRSH_DVM=dvm (never the one of the tests' own environment).
func runAs(t *testing.T, c *testbed.Cluster, dvm, command string, args ...string) result {
	t.Helper()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PRSH_DVM=") })
	env = append(env, c.Env()...)
	if dvm != "" {
		env = append(env, "PRSH_DVM="+dvm)
	}
	return runMpirun(t, filepath.Join(bin, command), env, args...)
}

// TestDVMCommands: prte --daemonize returns once the DVM is up, printing
// its URI; with PRSH_DVM holding it, prun and mpirun --dvm run jobs with
// a plain mpirun's output, line and status; pterm stops it and leaves
// nothing running; then PRSH_DVM is stale, which prun and pterm say in
// one line.
func TestDVMCommands(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	failing := []string{"-np", "2", "sh", "-c", `[ "$PRSH_RANK" = 1 ] && exit 3; exec sleep 60`}
	plain := mpirun(t, c, failing...)
	up := runAs(t, c, "", "prte", "--daemonize")
	uri := strings.TrimSpace(up.stdout)
	if up.status != 0 || !strings.HasPrefix(uri, "unix:") || strings.Count(up.stdout, "\n") != 1 {
		t.Fatalf("prte --daemonize: status %d, stdout %q, stderr %q", up.status, up.stdout, up.stderr)
	}
	checkPrivateFile(t, dvm.LogPath(uri))
	res := runAs(t, c, uri, "prun", "-np", "2", "sh", "-c", `echo "out $PRSH_RANK $PRSH_NODE"`)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("prun: status %d, stderr %q", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "out 0 node001", "out 1 node002")
	res = runAs(t, c, uri, "prun", failing...)
	if res.status != 3 || res.stderr != plain.stderr {
		t.Errorf("prun of a failing job: status %d, stderr %q; a plain mpirun's: status %d, stderr %q", res.status, res.stderr, plain.status, plain.stderr)
	}
	if res := runAs(t, c, uri, "mpirun", "--dvm", "-np", "2", "/bin/true"); res.status != 0 || res.stderr != "" {
		t.Errorf("mpirun --dvm with PRSH_DVM: status %d, stderr %q", res.status, res.stderr)
	}
	if res := runAs(t, c, uri, "pterm"); res.status != 0 || res.stdout+res.stderr != "" {
		t.Errorf("pterm: status %d, stdout %q, stderr %q", res.status, res.stdout, res.stderr)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Errorf("pterm left processes running: %+v", left)
	}
	waitGone(t, filepath.Dir(strings.TrimPrefix(uri, "unix:")))
	if _, err := os.Stat(dvm.LogPath(uri)); !os.IsNotExist(err) {
		t.Errorf("pterm of a DVM that lost nothing left its log %s (%v)", dvm.LogPath(uri), err)
	}
	for _, command := range []string{"prun", "pterm"} {
		res := runAs(t, c, uri, command, "/bin/true")
		if command == "pterm" {
			res = runAs(t, c, uri, command)
		}
		if res.status != 255 {
			t.Errorf("%s with a stale PRSH_DVM: status %d, want 255", command, res.status)
		}
		checkOneLine(t, res.stderr, `^mpirun: PRSH_DVM `+uri+`: no DVM answers there \(it was stopped, or started on another node\): connect: no such file or directory$`)
	}
}

// checkPrivateFile checks that path is a file of mode 0600.
func checkPrivateFile(t *testing.T, path string) {
	t.Helper()
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("%s: %v, want a file of mode 0600 (%v)", path, fi.Mode(), err)
	}
}

// TestDVMDaemonizedLog: a daemonized DVM's lines go on into its log
// beside its socket's directory: the warning of a node lost while it is
// up is there; pterm, the DVM having lost a node, keeps the log and says
// where it is, and a client of the stale URI is told too.
func TestDVMDaemonizedLog(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	up := runAs(t, c, "", "prte", "--daemonize")
	uri := strings.TrimSpace(up.stdout)
	if up.status != 0 || !strings.HasPrefix(uri, "unix:") {
		t.Fatalf("prte --daemonize: status %d, stdout %q, stderr %q", up.status, up.stdout, up.stderr)
	}
	log := dvm.LogPath(uri)
	t.Cleanup(func() { os.Remove(log) })
	checkPrivateFile(t, log)
	syscall.Kill(ortedOf(t, c, "node002"), syscall.SIGKILL)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(log)
		if regexp.MustCompile(`(?m)^mpirun: warning: the DVM lost node002$`).Match(b) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warning of node002's loss in the DVM's log %s:\n%s", log, b)
		}
	}
	res := runAs(t, c, uri, "pterm")
	if res.status != 0 || res.stderr != "mpirun: the DVM's lines are kept in "+log+"\n" {
		t.Errorf("pterm: status %d, stderr %q; want 0 and the log's path", res.status, res.stderr)
	}
	waitGone(t, filepath.Dir(strings.TrimPrefix(uri, "unix:")))
	checkPrivateFile(t, log)
	res = runAs(t, c, uri, "prun", "/bin/true")
	checkOneLine(t, res.stderr, `^mpirun: PRSH_DVM `+uri+`: no DVM answers there .*; its lines are in `+regexp.QuoteMeta(log)+`$`)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Errorf("pterm left processes running: %+v", left)
	}
}

// waitGone waits until the DVM's socket directory is gone: the DVM
// removes it as it exits.
func waitGone(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DVM did not exit: %s is still there", dir)
		}
	}
}

// TestDVMPrteForeground: prte in the foreground prints its URI and writes
// --dvm-uri; prun --dvm FILE and pterm FILE use the file; prte exits 0.
func TestDVMPrteForeground(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	uriFile := filepath.Join(t.TempDir(), "dvm.uri")
	prte, stdout, stderr := startCommand(t, c, "prte", "--dvm-uri", uriFile)
	for deadline := time.Now().Add(time.Minute); !fileHolds(uriFile, strings.TrimSpace(stdout.String())); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("prte did not come up; stdout %q, stderr:\n%s", stdout, stderr)
		}
	}
	res := runAs(t, c, "", "prun", "--dvm", uriFile, "-np", "2", "sh", "-c", `echo "rank $PRSH_RANK"`)
	if res.status != 0 {
		t.Fatalf("prun --dvm FILE: status %d, stderr %q", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "rank 0", "rank 1")
	if res := runAs(t, c, "", "pterm", uriFile); res.status != 0 {
		t.Errorf("pterm FILE: status %d, stderr %q", res.status, res.stderr)
	}
	if st := waitExit(t, prte); st != 0 {
		t.Errorf("prte exited %d; stderr:\n%s", st, stderr)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Errorf("pterm left processes running: %+v", left)
	}
}

// fileHolds says whether path holds the line want (not empty).
func fileHolds(path, want string) bool {
	b, err := os.ReadFile(path)
	return err == nil && want != "" && strings.TrimSpace(string(b)) == want
}

// TestDVMNoneNamed: prun, mpirun --dvm and pterm with no DVM named and
// PRSH_DVM unset are a usage error saying so, in one line.
func TestDVMNoneNamed(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	for _, tc := range []struct {
		command string
		args    []string
		flag    string
	}{
		{"prun", []string{"-np", "1", "/bin/true"}, "--dvm"},
		{"mpirun", []string{"--dvm", "-np", "1", "/bin/true"}, "--dvm"},
		{"pterm", nil, "--dvm-stop"},
	} {
		res := runAs(t, c, "", tc.command, tc.args...)
		if res.status != statusUsage {
			t.Errorf("%s %v: status %d, want %d", tc.command, tc.args, res.status, statusUsage)
		}
		checkOneLine(t, res.stderr, `^mpirun: `+tc.flag+` names no DVM and PRSH_DVM is not set: give `+tc.flag+` URI\|FILE, or export PRSH_DVM=URI as mpirun --dvm-start \(prte\) printed it \(see mpirun --help\)$`)
	}
}
