package main

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/internal/sshdtest"
)

// TestOpenSSH launches through the real OpenSSH server with mpirun's native
// ssh client: three aliases of one private sshd and a spawn degree of 1, so
// mpirun starts the first orted and the orteds start the other two, through
// sshd, with the config file mpirun hands down to them.
func TestOpenSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	home := t.TempDir()
	t.Setenv("HOME", home) // no user keys, config or known_hosts
	t.Setenv("SSH_AUTH_SOCK", "")
	cfg := srv.WriteConfig(t, "a1", "a2", "a3")
	orted := filepath.Join(bin, "orted")
	t.Cleanup(func() { checkNoOrted(t, orted) })

	run := func(args ...string) result {
		t.Helper()
		args = append([]string{"--ssh-config", cfg, "-H", "a1,a2,a3", "--spawn-degree", "1"}, args...)
		return mpirunEnv(t, sshdEnv(), args...)
	}

	res := run("sh", "-c", `echo $PRSH_RANK $PRSH_NODE`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	got := lines(res.stdout)
	sort.Strings(got)
	if want := []string{"0 a1", "1 a2", "2 a3"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ranks ran as:\n%s\nwant:\n%s", res.stdout, strings.Join(want, "\n"))
	}
	checkOneLine(t, res.stderr, "")
	checkNoOrted(t, orted)

	res = run("sh", "-c", "exit 5")
	if res.status != 5 {
		t.Errorf("exit %d, want 5; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: a[1-3]: rank [0-2] exited with status 5$`)
}

// sshdEnv is the test's environment without the variables that would point
// mpirun at another cluster's hostfile or ssh config.
func sshdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MPIRUN_HOSTFILE=") && !strings.HasPrefix(kv, "MPIRUN_SSH_CONFIG=") {
			env = append(env, kv)
		}
	}
	return env
}

// mpirunEnv runs mpirun with env, outside any testbed cluster.
func mpirunEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runMpirun(t, filepath.Join(bin, "mpirun"), env, args...)
}

// checkNoOrted fails the test if a process of path (bin's orted) is still
// running within 10 s, names them and kills them.
func checkNoOrted(t *testing.T, path string) {
	t.Helper()
	var left []int
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if left = procsOf(path); len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			break
		}
	}
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Errorf("orted still running after mpirun exited: pids %v", left)
}

// procsOf lists the processes whose command line mentions path: orted
// itself, and any shell sshd started it with.
func procsOf(path string) []int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone
		}
		if !strings.Contains(string(b), path) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
