package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prsh/modex/pmix"
	"prsh/testbed"
)

// notBooted is the orted's debug line when the job needs no PMIx server.
const notBooted = "no PMIx server: mpirun found that no program of the job may use it"

// serverURIs are the PMIX_SERVER_URI41 lines of the ranks' output.
func serverURIs(stdout string) []string {
	var out []string
	for _, l := range lines(stdout) {
		if uri, ok := strings.CutPrefix(l, "PMIX_SERVER_URI41="); ok {
			out = append(out, uri)
		} else if !strings.Contains(l, "=") && strings.Contains(l, "tcp4://") {
			out = append(out, l)
		}
	}
	return out
}

// checkServers checks that each of n ranks got a real PMIx server's
// address (booted) or the tripwire's (not booted).
func checkServers(t *testing.T, res result, n int, booted bool) {
	t.Helper()
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	uris := serverURIs(res.stdout)
	if len(uris) != n {
		t.Fatalf("%d server addresses, want %d; stdout:\n%s", len(uris), n, res.stdout)
	}
	for _, uri := range uris {
		if tripwire := strings.HasPrefix(uri, "prsh-no-pmix."); tripwire == booted {
			t.Errorf("server address %q, want booted=%v", uri, booted)
		}
	}
}

// TestPMIxOnlyWhenNeeded: --pmix auto boots no PMIx server for programs
// that link no MPI library (the ranks get the tripwire's address), and
// boots it for shells and scripts, which may start an MPI program; on and
// off decide alone.
func TestPMIxOnlyWhenNeeded(t *testing.T) {
	if !pmix.Available {
		t.Skip("built without PMIx: no server to boot")
	}
	c := cluster(t, testbed.Config{Nodes: 2})
	echo := []string{"sh", "-c", `echo "$PMIX_SERVER_URI41"`}
	checkServers(t, mpirun(t, c, "-np", "2", "env"), 2, false)
	checkServers(t, mpirun(t, c, append([]string{"-np", "2"}, echo...)...), 2, true)
	checkServers(t, mpirun(t, c, append([]string{"-np", "2", "--pmix", "off"}, echo...)...), 2, false)
	checkServers(t, mpirun(t, c, "-np", "2", "--pmix", "on", "env"), 2, true)
	// MPMD: one program that may use PMIx boots it for all.
	checkServers(t, mpirun(t, c, append([]string{"-np", "1", "env", ":", "-np", "1"}, echo...)...), 2, true)

	res := mpirun(t, c, "-v", "-np", "2", "/bin/true")
	if res.status != 0 || strings.Count(res.stderr, notBooted) != 2 {
		t.Errorf("/bin/true: exit %d, want 0 and two orteds saying %q; stderr:\n%s", res.status, notBooted, res.stderr)
	}
	res = mpirun(t, c, "--pmix", "maybe", "/bin/true")
	if res.status != 2 {
		t.Errorf("--pmix maybe: exit %d, want 2", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: --pmix must be auto, on or off, not "maybe" \(see mpirun --help\)$`)
}

// TestDaemonWithPMIxOnlyWhenNeeded: a job that needs no PMIx server runs
// under orted, the static daemon without it, and one that may need it
// under orted-pmix; --orted names the daemon for every job.
func TestDaemonWithPMIxOnlyWhenNeeded(t *testing.T) {
	if !pmix.Available {
		t.Skip("built without PMIx: no orted-pmix")
	}
	c := cluster(t, testbed.Config{Nodes: 2})
	// The rank's parent is its guard, whose parent is the daemon.
	daemonName := []string{"sh", "-c", `read -r _ _ _ daemon _ < /proc/$PPID/stat; cat /proc/$daemon/comm`}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pmix", "off"}, "orted"},
		{[]string{"--pmix", "on"}, "orted-pmix"},
		{[]string{"--pmix", "on", "--orted", filepath.Join(bin, "orted")}, "orted"},
	} {
		res := mpirun(t, c, append(append([]string{"-np", "2"}, tc.args...), daemonName...)...)
		if got := lines(res.stdout); res.status != 0 || len(got) != 2 || got[0] != tc.want || got[1] != tc.want {
			t.Errorf("%v: exit %d, daemons %q, want two %s; stderr:\n%s", tc.args, res.status, got, tc.want, res.stderr)
		}
	}
}

// TestMPICHWithoutPMIxServer: an MPICH program (PMI-1/2) runs and
// initialises without the PMIx server, which auto does not boot for it.
func TestMPICHWithoutPMIxServer(t *testing.T) {
	if !pmix.Available {
		t.Skip("built without PMIx: no server to boot")
	}
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	res := mpirun(t, c, "-v", "-np", "4", hello)
	if res.status != 0 || strings.Count(res.stderr, notBooted) != 2 {
		t.Errorf("exit %d, want 0 and two orteds saying %q; stderr:\n%s", res.status, notBooted, res.stderr)
	}
	if got := strings.Count(res.stdout, " of 4 sum 6\n"); got != 4 {
		t.Errorf("%d ranks saw the world of 4, want 4; stdout:\n%s", got, res.stdout)
	}
}

// TestOpenMPIUnderWrappers: an Open MPI program run through a script or
// a wrapper (env) still gets its PMIx server and sees one world; told
// --pmix off, it fails saying so, never as singletons.
func TestOpenMPIUnderWrappers(t *testing.T) {
	hello := openMPI(t, "hello")
	script := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec "+hello+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := cluster(t, testbed.Config{Nodes: 2, UTS: true})
	for _, argv := range [][]string{{script}, {"env", "OMPI_X=1", hello}} {
		res := mpirun(t, c, append([]string{"-np", "2"}, argv...)...)
		if res.status != 0 || strings.Count(res.stdout, " of 2 sum 1\n") != 2 {
			t.Errorf("%q: exit %d; stdout:\n%s\nstderr:\n%s", argv, res.status, res.stdout, res.stderr)
		}
	}
	res := mpirun(t, c, "-np", "2", "--pmix", "off", hello)
	if res.status != 255 {
		t.Errorf("--pmix off: exit %d, want 255; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node00[12]: rank [01] cannot start: it speaks PMIx \(Open MPI\), but mpirun started no PMIx server \(--pmix off, or --pmix auto found no MPI library in the program\): run it with --pmix on$`)
}
