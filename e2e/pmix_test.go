package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/modex/pmix"
	"prsh/testbed"
)

// TestOpenMPIWithoutPMIx: an mpirun without orted-pmix beside it still
// runs MPICH programs, and an Open MPI program under it fails with one
// line saying why and what to do, never as N silent singletons.
func TestOpenMPIWithoutPMIx(t *testing.T) {
	hello := testProgram(t, openMPIPrograms, "Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)", "hello")
	dir := filepath.Join(bin, "no-pmix")
	if err := build(dir, raceEnabled, false); err != nil {
		t.Fatal(err)
	}
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirunFrom(t, dir, c, "-np", "2", hello)
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node00[12]: rank [01] cannot start: it speaks PMIx \(Open MPI\), but its daemon has no PMIx server: put orted-pmix beside orted \(apt-get install libpmix-dev, then make bin\), or name it with --orted$`)
	res = mpirunFrom(t, dir, c, "-np", "2", mpich(t, "hello"))
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("MPICH under a build without PMIx: exit %d, stderr:\n%s", res.status, res.stderr)
	}
}

// TestOpenMPIWorld: an Open MPI program initialises through the PMIx
// server of each orted and sees one world of every rank, with each rank
// on the node the job map put it on, by slot and by node.
func TestOpenMPIWorld(t *testing.T) {
	where := openMPI(t, "where")
	c := cluster(t, testbed.Config{Nodes: 8, Slots: 4, UTS: true})
	cases := []struct {
		name string
		args []string
		np   int
		node func(rank int) int
	}{
		{"1 rank", []string{"-np", "1"}, 1, func(int) int { return 1 }},
		{"4 ranks on 1 node", []string{"-H", "node001:4", "-np", "4"}, 4, func(int) int { return 1 }},
		{"16 ranks on 4 nodes", []string{"-np", "16", "-H", "node001:4,node002:4,node003:4,node004:4"}, 16, func(r int) int { return r/4 + 1 }},
		{"32 ranks on 8 nodes by slot", []string{"-np", "32", "--spawn-degree", "2"}, 32, func(r int) int { return r/4 + 1 }},
		{"32 ranks on 8 nodes by node", []string{"-np", "32", "--map-by", "node", "--routed", "binomial"}, 32, func(r int) int { return r%8 + 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(tc.args, where)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
			}
			var want []string
			for r := range tc.np {
				want = append(want, fmt.Sprintf("rank %d of %d on node%03d", r, tc.np, tc.node(r)))
			}
			checkLines(t, res.stdout, want)
		})
	}
}

// TestOpenMPIMPMD: each program of an MPMD launch is its own app in the
// PMIx namespace, so MPI_APPNUM numbers them (0, 1, 2 in command-line
// order, whichever node a rank runs on), and the ranks of every program
// share one world (an allreduce of their app numbers).
func TestOpenMPIMPMD(t *testing.T) {
	appnum := openMPI(t, "appnum")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "--map-by", "node", "-np", "1", appnum, "a", ":", "-np", "2", appnum, "b", ":", "-np", "3", appnum, "c")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	want := []string{"a: rank 0 of 6 appnum 0 sum 8"}
	for r := 1; r < 3; r++ {
		want = append(want, fmt.Sprintf("b: rank %d of 6 appnum 1 sum 8", r))
	}
	for r := 3; r < 6; r++ {
		want = append(want, fmt.Sprintf("c: rank %d of 6 appnum 2 sum 8", r))
	}
	checkLines(t, res.stdout, want)
}

// TestOpenMPICollectives: an allreduce over 16 ranks on 4 nodes, and
// every pair of 12 ranks on 6 nodes exchanging 256 KiB both ways: the
// addresses the ranks publish through PMIx are the ones their peers get.
func TestOpenMPICollectives(t *testing.T) {
	hello, pairs := openMPI(t, "hello"), openMPI(t, "pairs")
	c := cluster(t, testbed.Config{Nodes: 6, Slots: 4, UTS: true})
	res := mpirun(t, c, "-np", "16", hello)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("allreduce: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range 16 {
		want = append(want, fmt.Sprintf("rank %d of 16 sum 120", r))
	}
	checkLines(t, res.stdout, want)

	res = mpirun(t, c, "-np", "12", "--map-by", "node", "--spawn-degree", "2", pairs)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("pairs: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	want = nil
	for r := range 12 {
		want = append(want, fmt.Sprintf("rank %d of 12: 0 bad words in the job", r))
	}
	checkLines(t, res.stdout, want)
}

// TestOpenMPIFailures: MPI_Abort(7) ends the job with 7 and one line
// naming the rank; a rank that leaves without MPI_Finalize ends it with
// one line too; a rank killed, or leaving, while the others wait in a
// PMIx fence ends the job and the fence never completes without it.
// Nothing hangs, nothing is left running, and the shared-memory segments
// that Open MPI asked the PMIx server to remove at the end (4 MB a rank,
// in /dev/shm by default; here in a directory of the test's) are gone.
func TestOpenMPIFailures(t *testing.T) {
	abort, nofinalize, fence := openMPI(t, "abort"), openMPI(t, "nofinalize"), openMPI(t, "fence")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2, UTS: true})
	shm := t.TempDir()
	run := func(args ...string) result {
		return mpirun(t, c, append([]string{"-x", "OMPI_MCA_btl_vader_backing_directory=" + shm}, args...)...)
	}
	res := run("--map-by", "node", abort)
	if res.status != 7 {
		t.Errorf("MPI_Abort(7): exit %d, want 7; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node003: rank 2 called MPI_Abort with status 7$`)

	res = run("--map-by", "node", nofinalize)
	if res.status != 255 {
		t.Errorf("exit without finalize: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node002: rank 1 exited with status 0 without finalizing MPI \(PMI\)$`)

	for _, tc := range []struct{ how, line string }{
		{"kill", `^mpirun: node001: rank 1 was killed by signal 9 \(SIGKILL\)$`},
		{"exit", `^mpirun: node001: rank 1 exited with status 0 without finalizing MPI \(PMI\)$`},
	} {
		res = run("-np", "8", fence, tc.how)
		if res.status == 0 || strings.Contains(res.stdout, "left the fence") {
			t.Errorf("rank 1 %s in a fence: exit %d, stdout:\n%s", tc.how, res.status, res.stdout)
		}
		checkMpirunLine(t, res.stderr, tc.line)
	}
	if left, _ := os.ReadDir(shm); len(left) > 0 {
		t.Errorf("shared-memory segments left after the failed jobs: %v", left)
	}
}

// TestPMIxFinalizeUnanswered: a rank whose server does not answer its
// finalize within PMIx_Finalize's 2 s (its orted stopped here; on a node
// short of CPU, slow) exits 0 before the server has read the finalize.
// The daemon waits for the library's last word of the client before it
// judges the rank's end: the job succeeds, with the rank's output.
func TestPMIxFinalizeUnanswered(t *testing.T) {
	prog := openMPI(t, "latefinalize")
	c := cluster(t, testbed.Config{Nodes: 1})
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd, stderr, marks := startedTo(t, c, out, 1, "--timeouts", "silence=25s", "-np", "1", prog)
	orted := ortedOf(t, c, "node001")
	syscall.Kill(orted, syscall.SIGSTOP)
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // PMIx_Finalize gives up after 2 s
	syscall.Kill(orted, syscall.SIGCONT)
	if status := waitExit(t, cmd); status != 0 || stderr.String() != "" {
		t.Errorf("exit %d, want 0; stderr:\n%s", status, stderr)
	}
	if got, _ := os.ReadFile(out.Name()); string(got) != "rank 0 finalized\n" {
		t.Errorf("stdout %q, want the rank's line", got)
	}
}

// TestEveryProtocol: one after the other on the same nodes, with no flag,
// an MPICH program (PMI-1), a Slurm-libpmi2 program (PMI-2) and an Open
// MPI program (PMIx) each see their whole world: every rank gets the
// environment of every protocol, and the server its client speaks to
// answers.
func TestEveryProtocol(t *testing.T) {
	ompi, mpichHello, ring := openMPI(t, "hello"), mpich(t, "hello"), pmi2(t, "ring")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2, UTS: true})
	for _, prog := range []string{mpichHello, ompi} {
		res := mpirun(t, c, "-np", "8", prog)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("%s: exit %d, stderr:\n%s", prog, res.status, res.stderr)
		}
		var want []string
		for r := range 8 {
			want = append(want, fmt.Sprintf("rank %d of 8 sum 28", r))
		}
		checkLines(t, res.stdout, want)
	}
	res := mpirun(t, c, "-np", "8", ring)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("PMI-2 ring: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range 8 {
		want = append(want, fmt.Sprintf("rank %d ring %d of 8 left v%d right v%d", r, r, (r+7)%8, (r+1)%8))
	}
	checkLines(t, res.stdout, want)
}

// TestPMIxDirectModex: a rank gets a value its neighbour on another node
// put, with no fence that collects data: the request goes to the
// neighbour's daemon along the routing topology and its PMIx server
// answers (direct modex). Open MPI's asynchronous modex uses the same
// path for every peer address; with two ranks a node it also meets the
// PMIx library's same-node race that such jobs avoid with the hash store
// (daemon.hashStoreEnv), which failed about one run in twenty under load.
func TestPMIxDirectModex(t *testing.T) {
	dmodex, pairs := openMPI(t, "dmodex"), openMPI(t, "pairs")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2, UTS: true})
	for _, args := range [][]string{
		{"-np", "8", "--map-by", "node", "--routed", "binomial", dmodex},
		{"-np", "8", "--map-by", "node", dmodex, "fence"},
	} {
		res := mpirun(t, c, args...)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("%v: exit %d, stderr:\n%s", args, res.status, res.stderr)
		}
		var want []string
		for r := range 8 {
			want = append(want, fmt.Sprintf("rank %d got \"value of rank %d\"", r, (r+1)%8))
		}
		checkLines(t, res.stdout, want)
	}
	res := mpirun(t, c, "-np", "8", "--map-by", "node", "-x", "OMPI_MCA_pmix_base_async_modex=1",
		"-x", "OMPI_MCA_pmix_base_collect_data=0", pairs)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("Open MPI async modex: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range 8 {
		want = append(want, fmt.Sprintf("rank %d of 8: 0 bad words in the job", r))
	}
	checkLines(t, res.stdout, want)
}

// TestPMIxLargeValue: the PMIx servers keep their shared-memory store in
// segments of 1 MiB (the library's own 4 MiB made half of an
// orted-pmix's memory), so a value of 900 KB is read whole on the same
// node and across nodes; one of 2 MB ends the job with mpirun's line,
// which carries the library's hint (NS_DATA_SEG_SIZE), and nothing left
// running; with the job's NS_DATA_SEG_SIZE (-x) the servers and every
// client use larger segments and it is read whole. A size that is not
// one is refused before any daemon starts.
func TestPMIxLargeValue(t *testing.T) {
	prog := openMPI(t, "bigvalue")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2, UTS: true})
	whole := func(size int) []string {
		return []string{fmt.Sprintf("rank 0 read %d bytes of rank 1: whole", size), fmt.Sprintf("rank 1 read %d bytes of rank 0: whole", size)}
	}
	for _, layout := range [][]string{{"-np", "2"}, {"-np", "2", "--map-by", "node"}} {
		for _, run := range []struct {
			args []string
			size int
		}{{nil, 900_000}, {[]string{"-x", "NS_DATA_SEG_SIZE=4194304"}, 2_000_000}} {
			args := slices.Concat(layout, run.args, []string{prog, fmt.Sprint(run.size)})
			res := mpirun(t, c, args...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("%v: exit %d, stderr:\n%s", args, res.status, res.stderr)
			}
			checkLines(t, res.stdout, whole(run.size))
		}
	}
	res := mpirun(t, c, "-np", "2", "--map-by", "node", prog, "2000000")
	if res.status != 255 {
		t.Errorf("2 MB in 1 MiB segments: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node00[12]: orted exited unexpectedly: .*NS_DATA_SEG_SIZE`)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running: %+v", left)
	}
	res = mpirun(t, c, "-np", "2", "-x", "NS_DATA_SEG_SIZE=lots", prog, "10")
	if res.status == 0 || !strings.Contains(res.stderr, "NS_DATA_SEG_SIZE=lots: want a size in bytes") {
		t.Errorf("a bad size: exit %d, stderr:\n%s", res.status, res.stderr)
	}
}

// TestOpenMPIParameters: --mca reaches Open MPI as its own mpirun's
// does. With only the "self" transport two ranks on two nodes cannot
// reach each other, and Open MPI says so; with "self,tcp" they can.
func TestOpenMPIParameters(t *testing.T) {
	pairs := openMPI(t, "pairs")
	c := cluster(t, testbed.Config{Nodes: 2, UTS: true})
	res := mpirun(t, c, "--mca", "btl", "self", pairs)
	if res.status == 0 || !strings.Contains(res.stderr, "unable to reach each other") {
		t.Errorf("--mca btl self: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	res = mpirun(t, c, "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", pairs)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("--mca btl self,tcp: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0 of 2: 0 bad words in the job", "rank 1 of 2: 0 bad words in the job"})
}

// TestPMIxTopology: every rank finds its node's hardware topology in the
// job's info, as under Open MPI's own daemons, so that MPI_Init does not
// make each rank discover the node again.
func TestPMIxTopology(t *testing.T) {
	topology := openMPI(t, "topology")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "4", topology)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0: topology given", "rank 1: topology given",
		"rank 2: topology given", "rank 3: topology given"})
}

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
// that link no MPI library (the ranks get the tripwire's address), nor
// for a shell's command string whose every command is such a program or
// a builtin, and boots it for a shell that runs what cannot be told,
// which may be an MPI program; on and off decide alone.
func TestPMIxOnlyWhenNeeded(t *testing.T) {
	if !pmix.Available {
		t.Skip("built without PMIx: no server to boot")
	}
	c := cluster(t, testbed.Config{Nodes: 2})
	echo := []string{"sh", "-c", `echo "$PMIX_SERVER_URI41"; $NEXT`}
	checkServers(t, mpirun(t, c, "-np", "2", "env"), 2, false)
	checkServers(t, mpirun(t, c, "-np", "2", "sh", "-c", `sleep 0; echo "$PMIX_SERVER_URI41"`), 2, false)
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

// TestOpenMPIUnderWrappers: an Open MPI program run through a script, a
// wrapper (env) or a shell's command string still gets its PMIx server
// and sees one world; told --pmix off, it fails saying so, never as
// singletons.
func TestOpenMPIUnderWrappers(t *testing.T) {
	hello := openMPI(t, "hello")
	script := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec "+hello+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := cluster(t, testbed.Config{Nodes: 2, UTS: true})
	for _, argv := range [][]string{{script}, {"env", "OMPI_X=1", hello}, {"sh", "-c", "sleep 0; exec " + hello}} {
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
