package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"prsh/testbed"
)

// The PMI services of the orteds, end to end: real mpirun, real orteds
// over ssh on the testbed, real PMI clients — Slurm's libpmi2 for PMI-2,
// and PMI-1 and PMI-2 bytes written by hand on descriptor 3 for input no
// real client sends. Ordering between ranks is explicit (marker files,
// and /proc/PID/syscall to see a rank blocked on its PMI socket), never
// a matter of timing; see testdata/pmi.

// pmi2Programs compiles the C programs of testdata/pmi against Slurm's
// libpmi2, once.
var pmi2Programs = sync.OnceValues(func() (string, error) {
	if _, err := os.Stat("/usr/include/slurm/pmi2.h"); err != nil {
		return "", errMissing
	}
	dir := filepath.Join(bin, "pmi2")
	return dir, compileC(dir, "testdata/pmi/*.c", "cc", []string{"-O2", "-Wall", "-I/usr/include/slurm"}, []string{"-lpmi2"})
})

// pmi2 returns the path of a compiled libpmi2 test program. Without
// Slurm's PMI-2 headers (.ci/run installs libpmi2-0-dev) the test is
// skipped; a program that does not compile fails it.
func pmi2(t *testing.T, name string) string {
	t.Helper()
	return testProgram(t, pmi2Programs, "Slurm's libpmi2 is not installed (apt-get install libpmi2-0-dev)", name)
}

// pmiScript returns the absolute path of a script of testdata/pmi.
func pmiScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "pmi", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// marksDir is a fresh directory the ranks of one job synchronise through.
func marksDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "marks")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPMI2World: Slurm's PMI-2 client served by the orteds of 4 nodes of
// 2 slots. PMI2_Init gives every rank its rank and size; keys whose
// values hold spaces, commas and '=' go through fences over the daemon
// tree, and every rank reads every rank's, twice; PMI_process_mapping is
// the one the placement implies, and names the real nodes; on each node
// the lowest local rank puts a node attribute only once its node-mates
// wait for it (wait=TRUE), and they get its value, never "not found";
// every rank finalizes; exit 0 and nothing on stderr.
func TestPMI2World(t *testing.T) {
	job := pmi2(t, "pmi2job")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	var n []string
	for _, node := range c.Nodes() {
		n = append(n, node.Name)
	}
	cases := []struct {
		name    string
		args    []string
		nodes   []string // node of each rank
		mapping string
	}{
		{"8 ranks by slot", []string{"-np", "8"},
			[]string{n[0], n[0], n[1], n[1], n[2], n[2], n[3], n[3]}, "(vector,(0,4,2))"},
		{"8 ranks by node along a chain of daemons", []string{"-np", "8", "--map-by", "node", "--spawn-degree", "1"},
			[]string{n[0], n[1], n[2], n[3], n[0], n[1], n[2], n[3]}, "(vector,(0,4,1))"},
		{"7 ranks by slot", []string{"-np", "7", "--spawn-degree", "2"},
			[]string{n[0], n[0], n[1], n[1], n[2], n[2], n[3]}, "(vector,(0,3,2),(3,1,1))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mappingNodes(t, tc.mapping, len(tc.nodes)); !sameGrouping(got, tc.nodes) {
				t.Fatalf("test case: mapping %s places ranks on nodes %v, not like %v", tc.mapping, got, tc.nodes)
			}
			args := append([]string{"-x", "MARKS=" + marksDir(t)}, tc.args...)
			res := mpirun(t, c, append(args, job, "world", tc.mapping)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", res.status, res.stderr, res.stdout)
			}
			lowest := map[string]int{}
			for r := len(tc.nodes) - 1; r >= 0; r-- {
				lowest[tc.nodes[r]] = r
			}
			var want []string
			for r, node := range tc.nodes {
				want = append(want, fmt.Sprintf("rank %d of %d on %s: mapping %s: node-attr put by rank %d on %s",
					r, len(tc.nodes), node, tc.mapping, lowest[node], node))
			}
			checkLines(t, res.stdout, want)
		})
	}
}

// mappingNodes expands a PMI_process_mapping for size ranks the way the
// clients do (modex/pmi/WIRE.md §5): blocks of (first node, nodes, ranks per
// node), in order, starting over at the first block when they run out.
func mappingNodes(t *testing.T, mapping string, size int) []int {
	t.Helper()
	if !regexp.MustCompile(`^\(vector(,\(\d+,\d+,\d+\))+\)$`).MatchString(mapping) {
		t.Fatalf("mapping %q is not (vector,(s,c,p),...)", mapping)
	}
	var nodes []int
	blocks := regexp.MustCompile(`\((\d+),(\d+),(\d+)\)`).FindAllStringSubmatch(mapping, -1)
	for len(nodes) < size {
		placed := len(nodes)
		for _, b := range blocks {
			s, _ := strconv.Atoi(b[1])
			cnt, _ := strconv.Atoi(b[2])
			ppn, _ := strconv.Atoi(b[3])
			for node := s; node < s+cnt; node++ {
				for range ppn {
					nodes = append(nodes, node)
				}
			}
		}
		if len(nodes) == placed {
			t.Fatalf("mapping %q places no rank", mapping)
		}
	}
	return nodes[:size]
}

// sameGrouping says whether two rank→node lists put the same ranks
// together, whatever the nodes are called.
func sameGrouping[A, B comparable](a []A, b []B) bool {
	if len(a) != len(b) {
		return false
	}
	ab, ba := map[A]B{}, map[B]A{}
	for i := range a {
		if x, ok := ab[a[i]]; ok && x != b[i] {
			return false
		}
		if y, ok := ba[b[i]]; ok && y != a[i] {
			return false
		}
		ab[a[i]], ba[b[i]] = b[i], a[i]
	}
	return true
}

// TestPMIBadInput: a rank that sends its orted something that cannot be
// read as PMI — no MPI involved, bytes written by hand on descriptor 3 —
// never crashes or hangs the job. What the user should see: the job
// fails (255, as when a rank leaves without finalizing: this rank's PMI
// is unusable, and the others would wait for it in the next fence), with
// one line of mpirun's naming the node, the rank and what was wrong;
// nothing else on stderr (no daemon log lines); nothing left running.
// Where the orted can tell at once, it also hangs up on the rank (which
// waits for that); input cut short by the rank's exit is only seen at the
// exit, and is still named as bad input, not as an exit without finalize.
// --timeout turns a hang into a quick failure.
func TestPMIBadInput(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	const (
		init1 = `printf 'cmd=init pmi_version=1 pmi_subversion=1\n' >&3; read -r reply <&3; ` +
			`[ "$reply" = "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0" ] || exit 9; `
		init2 = `printf 'cmd=init pmi_version=2 pmi_subversion=0\n' >&3; read -r reply <&3; ` +
			`[ "$reply" = "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0" ] || exit 9; `
		fullinit = `cmd=fullinit;pmirank=1;threaded=FALSE;` // 38 bytes
	)
	cases := []struct {
		name   string
		bad    string // what rank 1 sends; rank 0 only sleeps
		hangup bool   // the orted can tell at once, and hangs up
		line   string // mpirun's line after "rank 1"
	}{
		{"garbage", `printf 'garbage\n' >&3`, true, `[: ].*PMI.*frame length "garbag"`},
		{"binary garbage", `printf '\001\377\000\001\002\003\004\n' >&3`, true, `[: ].*PMI.*frame length`},
		{"over-long PMI-1 line", init1 + `printf 'cmd=put kvsname=kvs key=big value=%05000d\n' 0 >&3`, true,
			`[: ].*PMI.*PMI-1 line longer than`},
		{"PMI-2 frame length not a number", init2 + `printf '4x    ` + fullinit + `' >&3`, true,
			`[: ].*PMI.*frame length "4x    "`},
		{"PMI-2 frame length beyond the limit", init2 + `printf '999999` + fullinit + `' >&3`, true,
			`[: ].*PMI.*frame length "999999"`},
		{"PMI-2 frame length zero", init2 + `printf '0     ` + fullinit + `' >&3`, true,
			`[: ].*PMI.*frame length "0     "`},
		{"PMI-2 frame longer than its length", init2 + `printf '10    ` + fullinit + `' >&3`, true,
			`[: ].*PMI.*frame length "it;pmi"`},
		{"PMI-1 line cut by the exit", init1 + `printf 'cmd=get_maxes' >&3`, false,
			`[: ].*PMI.*closed inside a PMI-1 message`},
		{"PMI-2 frame shorter than its length", init2 + `printf '200   ` + fullinit + `' >&3`, false,
			`[: ].*PMI.*closed inside a PMI-2 frame`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.bad
			if tc.hangup {
				bad += `; cat <&3 >/dev/null 2>&1` // EOF, or a reset if it left input unread
			}
			rank := `if [ "$PRSH_RANK" = 1 ]; then ` + bad + `; fi; sleep 1`
			res := mpirun(t, c, "--timeout", "30", "sh", "-c", rank)
			if res.status != 255 {
				t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
			}
			checkOneLine(t, res.stderr, `^mpirun: node002: rank 1`+tc.line)
		})
	}
}

// The fence tests run 8 ranks on 4 nodes of 2 slots, every rank but one
// waiting in a fence that one never enters. In the "waiters ignore
// SIGTERM" variants the waiting ranks outlive the job's SIGTERM for the
// --kill-grace, as ranks that clean up on SIGTERM do: a fence that
// completes without the missing rank while the job ends shows up as their
// complaint on stderr.

type fenceVariant struct {
	name string
	args []string
}

var fenceVariants = []fenceVariant{
	{"", nil},
	{"/waiters ignore SIGTERM", []string{"-x", "WAITERS_IGNORE_TERM=1", "--kill-grace", "1s"}},
}

// TestPMIFenceRankKilled: a rank SIGKILLs itself while every other rank
// waits in the fence. The job ends with 137 and one line of mpirun's
// naming that rank; the fence never completes; nothing is left running.
// PMI-2 with Slurm's client, and PMI-1 by hand.
func TestPMIFenceRankKilled(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	for _, flavour := range pmiFenceFlavours(t) {
		for _, v := range fenceVariants {
			t.Run(flavour.name+v.name, func(t *testing.T) {
				args := append([]string{"-x", "MARKS=" + marksDir(t), "-np", "8"}, v.args...)
				res := mpirun(t, c, append(args, flavour.path, "kill", "5")...)
				if res.status != 137 {
					t.Errorf("exit %d, want 137; stderr:\n%s", res.status, res.stderr)
				}
				checkOneLine(t, res.stderr, `^mpirun: node003: rank 5 was killed by signal 9 \(SIGKILL\)$`)
			})
		}
	}
}

// TestPMIFenceRankExits: a rank that started PMI exits 0 without fencing
// or finalizing while the others wait in the fence. The fence must not
// complete without it (the others would go on with a job missing a rank):
// the job ends with 255 and one line naming the rank, as for an exit
// without MPI_Finalize (modex/pmi/WIRE.md §8, item 6).
func TestPMIFenceRankExits(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	for _, flavour := range pmiFenceFlavours(t) {
		for _, v := range fenceVariants {
			t.Run(flavour.name+v.name, func(t *testing.T) {
				args := append([]string{"-x", "MARKS=" + marksDir(t), "-np", "8"}, v.args...)
				res := mpirun(t, c, append(args, flavour.path, "exit0", "3")...)
				if res.status != 255 {
					t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
				}
				checkOneLine(t, res.stderr, `^mpirun: node002: rank 3 exited with status 0 without finalizing MPI \(PMI\)$`)
			})
		}
	}
}

// TestPMIFenceNeverEntered: a rank never enters the fence every other
// rank waits in. --timeout 3 ends the job with 124, and Ctrl-C (sent once
// every other rank is known to wait) with 130; one line of mpirun's each
// time, the fence never completes, and nothing is left running. PMI-2
// with Slurm's client, and PMI-1 by hand.
func TestPMIFenceNeverEntered(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	for _, flavour := range pmiFenceFlavours(t) {
		for _, v := range fenceVariants {
			t.Run(flavour.name+"/timeout"+v.name, func(t *testing.T) {
				args := append([]string{"-x", "MARKS=" + marksDir(t), "-np", "8", "--timeout", "3"}, v.args...)
				res := mpirun(t, c, append(args, flavour.path, "idle", "2")...)
				if res.status != 124 {
					t.Errorf("exit %d, want 124; stderr:\n%s", res.status, res.stderr)
				}
				checkOneLine(t, res.stderr, `^mpirun: the job ran past --timeout 3s, terminating it$`)
			})
			t.Run(flavour.name+"/interrupt"+v.name, func(t *testing.T) {
				// started waits for 8 marks: fence.<r> of the 7 waiting
				// ranks, and rank 2's "ready", written once they all wait.
				args := append([]string{"-np", "8", "--stdin", "none"}, v.args...)
				cmd, stderr, marks := started(t, c, 8, append(args, flavour.path, "idle", "2")...)
				if _, err := os.Stat(filepath.Join(marks, "ready")); err != nil {
					t.Fatalf("rank 2 is not ready: %v", err)
				}
				interrupted(t, c, cmd, stderr)
			})
		}
	}
}

type pmiFlavour struct{ name, path string }

// pmiFenceFlavours are the two programs that take "kill R", "idle R" and
// "exit0 R": Slurm's client (skipped without libpmi2), and PMI-1 by hand.
func pmiFenceFlavours(t *testing.T) []pmiFlavour {
	t.Helper()
	flavours := []pmiFlavour{{"PMI-1", pmiScript(t, "pmi1fence.sh")}}
	if dir, err := pmi2Programs(); err == nil {
		flavours = append(flavours, pmiFlavour{"PMI-2", filepath.Join(dir, "pmi2job")})
	} else if err != errMissing {
		t.Fatal(err)
	} else {
		t.Log("Slurm's libpmi2 is not installed: PMI-1 only")
	}
	return flavours
}

// TestPMIXRing: PMIX_Ring through Slurm's libpmi2 client, computed as a
// gather up the daemon tree and a scatter down it: every rank gets its
// position and its two neighbours' values, wrapping round, whatever the
// placement and the tree.
func TestPMIXRing(t *testing.T) {
	prog := pmi2(t, "ring")
	c := cluster(t, testbed.Config{Nodes: 5, Slots: 2})
	for _, args := range [][]string{
		{"-np", "9", "--map-by", "node", "--spawn-degree", "2"},
		{"-np", "10", "--routed", "direct"},
		{"-np", "1"},
	} {
		res := mpirun(t, c, append(args, prog)...)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("%v: exit %d, stderr:\n%s", args, res.status, res.stderr)
		}
		var np int
		fmt.Sscan(args[1], &np)
		var want []string
		for r := range np {
			want = append(want, fmt.Sprintf("rank %d ring %d of %d left v%d right v%d", r, r, np, (r+np-1)%np, (r+1)%np))
		}
		checkLines(t, res.stdout, want)
	}
}

// TestBigFence: one PMI fence carries 32 ranks' 64 KiB of puts each: a
// 2 MiB FenceDown, and FenceUps of 512 KiB and more, all far over the
// 64 KiB that goes inline, so every daemon passes them on its links' bulk
// streams. Every rank then checks every value (32² × 64 gets: they, not
// the fence, take most of the time, hence no more ranks).
func TestBigFence(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "bigfence")
	if out, err := exec.Command("go", "build", "-o", prog, "./testdata/bigfence").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const ranks, keys = 32, 64
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 8})
	res := mpirun(t, c, "-np", itoa(ranks), "--spawn-degree", "2", prog, itoa(keys))
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range ranks {
		want = append(want, fmt.Sprintf("rank %d of %d: %d values ok", r, ranks, ranks*keys))
	}
	checkLines(t, res.stdout, want)
}

// TestGoClient: a Go program that uses every call of the Go PMI client
// (modex/pmi/client/example: put, fence, get, allgather, iallgather and
// ifence with wait, ring, finalize, abort) under the real mpirun and
// orteds: the collectives run over the daemon tree, whatever the
// placement and the tree, and each rank prints what it checked.
func TestGoClient(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "goclient")
	args := []string{"build", "-o", prog}
	if raceEnabled { // the client's own races fail the test too (GORACE log_path)
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "prsh/modex/pmi/client/example")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	for _, args := range [][]string{
		{"-np", "8", "--spawn-degree", "2"},
		{"-np", "7", "--map-by", "node", "--routed", "binomial"},
		{"-np", "5", "--routed", "direct"},
		{"-np", "1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := mpirun(t, c, append(args, prog)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
			}
			var np int
			fmt.Sscan(args[1], &np)
			var want []string
			for r := range np {
				want = append(want, fmt.Sprintf("rank %d of %d: kvs ok, allgather ok, iallgather ok, ifence ok, "+
					"ring %d of %d left v%d right v%d, finalize ok", r, np, r, np, (r+np-1)%np, (r+1)%np))
			}
			checkLines(t, res.stdout, want)
		})
	}
	t.Run("abort", func(t *testing.T) {
		res := mpirun(t, c, "-np", "6", "--map-by", "node", prog, "abort")
		t.Logf("stderr:\n%s", res.stderr)
		if res.status != 3 {
			t.Errorf("exit %d, want 3; stderr:\n%s", res.status, res.stderr)
		}
		if !regexp.MustCompile(`(?m)^mpirun: node00\d: rank 5 called MPI_Abort with status 3`).MatchString(res.stderr) {
			t.Errorf("no abort line for rank 5 in stderr:\n%s", res.stderr)
		}
		if res.stdout != "" {
			t.Errorf("stdout after an abort:\n%s", res.stdout)
		}
	})
}
