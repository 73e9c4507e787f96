package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"prsh/job"
	"prsh/testbed"
)

// The habits users bring from Open MPI, Hydra and batch systems (issue 18).

// TestExportKeepsCommas: -x values reach the ranks whole, commas and
// spaces included.
func TestExportKeepsCommas(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "-x", "CUDA_VISIBLE_DEVICES=0,1", "-x", "MSG=hello, world", "-x", "PADDED= a , b ",
		"sh", "-c", `echo "$PRSH_RANK|$CUDA_VISIBLE_DEVICES|$MSG|$PADDED|"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "0|0,1|hello, world| a , b |", "1|0,1|hello, world| a , b |")
}

// TestSlotsMakeRanks: without -np there is one rank per slot, whether the
// slots come from host:N, a hostfile, a range or a repeated name.
func TestSlotsMakeRanks(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2})
	checkPlacements(t, c, []placement{
		{"host:N", []string{"-H", "node001:2,node002:2"}, []string{"0 node001", "1 node001", "2 node002", "3 node002"}, ""},
		{"hostfile slots", nil, []string{"0 node001", "1 node001", "2 node002", "3 node002", "4 node003", "5 node003"}, ""},
		{"range", []string{"-H", "node[001-002,003]"}, []string{"0 node001", "1 node002", "2 node003"}, ""},
		{"range with slots", []string{"-H", "node[002-003]:2", "--map-by", "node"}, []string{"0 node002", "1 node003", "2 node002", "3 node003"}, ""},
		{"repeats", []string{"-H", "node003,node003"}, []string{"0 node003", "1 node003"}, ""},
	})
}

// placement is a run of mpirun with args, the "rank node" of each rank it
// should start, and the one line it should print on stderr ("" for none).
type placement struct {
	name   string
	args   []string
	want   []string
	stderr string
}

func checkPlacements(t *testing.T, c *testbed.Cluster, cases []placement) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(tc.args, "sh", "-c", `echo "$PRSH_RANK $PRSH_TESTBED_NODE"`)...)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			wantSet(t, res.stdout, tc.want...)
			checkOneLine(t, res.stderr, tc.stderr)
		})
	}
}

// TestLocalSlots: -H localhost:4 is four ranks, started without ssh.
func TestLocalSlots(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	res := mpirun(t, c, "-H", "localhost:4", "sh", "-c", `echo "$PRSH_RANK $PRSH_NODE"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "0 localhost", "1 localhost", "2 localhost", "3 localhost")
	if c.Sessions() != 0 {
		t.Errorf("%d ssh sessions for a local run", c.Sessions())
	}
}

// TestBatchAllocation: with no hosts given, the nodes and slots of a
// Slurm, PBS or LSF allocation are used.
func TestBatchAllocation(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	nodefile := filepath.Join(t.TempDir(), "nodefile")
	os.WriteFile(nodefile, []byte("node002\nnode002\nnode003\n"), 0o644)
	cases := []struct {
		name string
		env  []string
		want []string
	}{
		{"slurm", []string{"SLURM_JOB_NODELIST=node[001-003]", "SLURM_TASKS_PER_NODE=2(x2),1"},
			[]string{"0 node001", "1 node001", "2 node002", "3 node002", "4 node003"}},
		{"pbs", []string{"PBS_NODEFILE=" + nodefile}, []string{"0 node002", "1 node002", "2 node003"}},
		{"lsf hostfile", []string{"LSB_DJOB_HOSTFILE=" + nodefile}, []string{"0 node002", "1 node002", "2 node003"}},
		{"lsf hosts", []string{"LSB_MCPU_HOSTS=node003 2 node001 1"}, []string{"0 node003", "1 node003", "2 node001"}},
		// Hydra's hostfile variable comes before an allocation, Open MPI's
		// default hostfile after it.
		{"hydra host file", []string{"HYDRA_HOST_FILE=" + nodefile, "SLURM_JOB_NODELIST=node001", "SLURM_TASKS_PER_NODE=1"},
			[]string{"0 node002", "1 node002", "2 node003"}},
		{"open mpi default hostfile", []string{"OMPI_MCA_orte_default_hostfile=" + nodefile}, []string{"0 node002", "1 node002", "2 node003"}},
		{"open mpi default hostfile in an allocation", []string{"OMPI_MCA_orte_default_hostfile=" + nodefile, "SLURM_JOB_NODELIST=node001", "SLURM_TASKS_PER_NODE=1"},
			[]string{"0 node001"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirunInAllocation(t, c, tc.env, "sh", "-c", `echo "$PRSH_RANK $PRSH_TESTBED_NODE"`)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			wantSet(t, res.stdout, tc.want...)
		})
	}
	t.Run("said", func(t *testing.T) {
		res := mpirunInAllocation(t, c, []string{"LSB_MCPU_HOSTS=node003 2"}, "--display-allocation", "-v", "/bin/true")
		if res.status != 0 {
			t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
		}
		for _, want := range []string{
			"mpirun: allocation (hosts from the batch allocation of LSF (LSB_MCPU_HOSTS)):\n    node003  slots=2\n",
			`mpirun: hosts: from="hosts from the batch allocation of LSF (LSB_MCPU_HOSTS)" nodes=1`,
		} {
			if !strings.Contains(res.stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, res.stderr)
			}
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		res := mpirunInAllocation(t, c, []string{"SLURM_JOB_NODELIST=node[001-003]", "SLURM_TASKS_PER_NODE=2(x2)"}, "/bin/true")
		if res.status != statusUsage {
			t.Errorf("exit %d, want %d", res.status, statusUsage)
		}
		checkOneLine(t, res.stderr, `^mpirun: batch allocation from Slurm .*SLURM_TASKS_PER_NODE "2\(x2\)" gives 2 nodes, SLURM_JOB_NODELIST names 3`)
	})
}

// mpirunInAllocation runs mpirun on the cluster as inside a batch job
// whose environment is alloc: without MPIRUN_HOSTFILE (or Hydra's or
// Open MPI's hostfile variable), and without any allocation the test
// itself runs in.
func mpirunInAllocation(t *testing.T, c *testbed.Cluster, alloc []string, args ...string) result {
	t.Helper()
	var env []string
	for _, kv := range append(os.Environ(), c.Env()...) {
		name, _, _ := strings.Cut(kv, "=")
		if name != testbed.EnvHostfile && name != "HYDRA_HOST_FILE" && name != "OMPI_MCA_orte_default_hostfile" &&
			!strings.HasPrefix(name, "SLURM_") && !strings.HasPrefix(name, "PBS_") && !strings.HasPrefix(name, "LSB_") {
			env = append(env, kv)
		}
	}
	res := runMpirun(t, filepath.Join(bin, "mpirun"), append(env, alloc...), args...)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("mpirun %v left processes running: %+v", args, left)
	}
	return res
}

// TestMPMD: programs separated by ":" are one world, ranks numbered in
// order, each with its own -x, --mca and --wdir on top of mpirun's; a
// -env before the first program is that program's alone, as in Hydra.
func TestMPMD(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	dir := t.TempDir()
	show := `echo "$PRSH_RANK/$PRSH_SIZE/$PMI_SIZE $0 app=$OMPI_APPNUM g=$G own=$OWN mca=$OMPI_MCA_p $(pwd)"`
	res := mpirun(t, c, "-x", "G=1,2", "--mca", "p", "all", "-env", "OWN", "a", "--wdir", "/", "-np", "1", "sh", "-c", show, "A",
		":", "-np", "2", "-x", "OWN=b b", "--wdir", dir, "sh", "-c", show, "B",
		":", "-n", "1", "-env", "OWN", "c", "--mca", "p", "c", "sh", "-c", show, "C")
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "0/4/4 A app=0 g=1,2 own=a mca=all /",
		"1/4/4 B app=1 g=1,2 own=b b mca=all "+dir, "2/4/4 B app=1 g=1,2 own=b b mca=all "+dir,
		"3/4/4 C app=2 g=1,2 own=c mca=c /")
}

// TestMPMDMistakes: a colon used wrongly is a usage error naming the
// program, never a silent misparse.
func TestMPMDMistakes(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	cases := []struct {
		name string
		args []string
		line string
	}{
		{"trailing colon", []string{"-np", "1", "echo", "A", ":"}, `^mpirun: program 2 of 2 \(\): no command after ':' number 1 \(see mpirun --help\)$`},
		{"leading colon", []string{":", "echo", "A"}, `^mpirun: program 1 of 2 \(\): no command before the first ':'`},
		{"no count", []string{"-np", "1", "echo", "A", ":", "echo", "B"}, `^mpirun: program 2 of 2 \(echo B\): no -np: with several programs`},
		{"unknown option", []string{"-np", "1", "echo", "A", ":", "-np", "1", "--bogus", "echo"}, `^mpirun: program 2 of 2 .*unknown option --bogus`},
		{"bad count", []string{"-np", "1", "echo", "A", ":", "-np", "two", "echo"}, `^mpirun: program 2 of 2 .*-np "two": want a count`},
		{"-envall of several", []string{"-envall", "-np", "1", "echo", "A", ":", "-np", "1", "echo"}, `^mpirun: -envall before the first of several programs: Hydra applies it to that program alone, which prsh cannot; give -genvall for every program`},
		{"bad parameter", []string{"-np", "1", "echo", "A", ":", "-np", "1", "--mca", "btl-tcp", "x", "echo"}, `^mpirun: program 2 of 2 .*--mca "btl-tcp" "x": want --mca KEY VALUE, KEY of letters, digits and '_'`},
		{"too many ranks", []string{"-np", "1", "echo", "A", ":", "-np", "2", "echo"}, `^mpirun: the -np of the 2 programs add up to 3: -np 3 exceeds the 2 slots available`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, tc.args...)
			if res.status != statusUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.status, statusUsage, res.stderr)
			}
			checkOneLine(t, res.stderr, tc.line)
		})
	}
}

// TestPeerSpellings: what Open MPI, Hydra and srun users type works, or
// says in one line what prsh does instead.
func TestPeerSpellings(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	hostfile := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hostfile, []byte("node002:2\n"), 0o644)
	checkPlacements(t, c, []placement{
		{"-N", []string{"-N", "1"}, []string{"0 node001", "1 node002"}, ""},
		{"-ppn", []string{"-ppn", "2", "-n", "3"}, []string{"0 node001", "1 node001", "2 node002"}, ""},
		{"ppr", []string{"--map-by", "ppr:1:node"}, []string{"0 node001", "1 node002"}, ""},
		{"-hosts", []string{"-hosts", "node001:2"}, []string{"0 node001", "1 node001"}, ""},
		{"-f", []string{"-f", hostfile}, []string{"0 node002", "1 node002"}, ""},
		{"no-ops", []string{"--allow-run-as-root", "--bind-to", "none", "-np", "1"}, []string{"0 node001"}, ""},
		{"--bynode", []string{"--bynode", "-np", "3"}, []string{"0 node001", "1 node002", "2 node001"}, ""},
		{"--map-by numa", []string{"--map-by", "numa", "--bind-to", "numa", "-np", "3"}, []string{"0 node001", "1 node001", "2 node002"}, ""},
		{"--map-by l3cache:PE=1", []string{"--map-by", "l3cache:PE=1", "-np", "2"}, []string{"0 node001", "1 node001"}, ""},
		{"--byslot", []string{"--byslot", "-np", "3"}, []string{"0 node001", "1 node001", "2 node002"}, ""},
		{"agreeing spellings", []string{"--bind-to-core", "--bind-to", "core:overload-allowed", "-np", "1"}, []string{"0 node001"}, ""},
		{"older no-ops", []string{"--nooversubscribe", "--use-hwthread-cpus", "-q", "--noprefix", "-np", "1"}, []string{"0 node001"}, ""},
		{"bind-to numa", []string{"--bind-to", "numa", "-np", "1"}, []string{"0 node001"}, ""},
		{"mca", []string{"--mca", "btl", "tcp,self", "-np", "1"}, []string{"0 node001"}, ""},
		{"launcher's mca", []string{"--mca", "plm_rsh_agent", "rsh", "-np", "1"}, []string{"0 node001"},
			`^mpirun: warning: --mca plm_rsh_agent is a parameter of Open MPI's own launcher, which prsh replaces: use --launch-agent 'CMD %h'$`},
	})
	t.Run("MPIEXEC_TIMEOUT", func(t *testing.T) {
		t.Setenv("MPIEXEC_TIMEOUT", "1")
		res := mpirun(t, c, "sleep", "600")
		if res.status != 124 {
			t.Errorf("exit %d, want 124; stderr:\n%s", res.status, res.stderr)
		}
	})
}

// TestPeerMistakes: flags prsh does not have, and values it cannot take,
// are one line and exit 2, with what to type instead.
func TestPeerMistakes(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	cases := []struct {
		args []string
		line string
	}{
		{[]string{"--display-mapp", "true"}, `^mpirun: unknown flag --display-mapp; did you mean --display-map\? \(see mpirun --help\)$`},
		{[]string{"--bind-to", "core:overload", "true"}, `^mpirun: --bind-to "core:overload": unknown qualifier "overload"`},
		{[]string{"--bind", "core", "true"}, `^mpirun: unknown flag --bind: --bind was renamed --listen-ip`},
		{[]string{"--listen-ip", "core", "true"}, `^mpirun: --listen-ip "core": want an IP address of this host`},
		{[]string{"--bind-to", "cores", "true"}, `^mpirun: --bind-to "cores": want none`},
		{[]string{"--map-by", "ppr:2:socket", "true"}, `^mpirun: --map-by "ppr:2:socket": only ppr:N:node is supported`},
		{[]string{"-genvall", "-genvnone", "true"}, `^mpirun: -genvall and -genvnone contradict each other`},
		{[]string{"--bynode", "--map-by", "slot", "true"}, `^mpirun: --bynode and --map-by slot contradict each other`},
		{[]string{"--bind-to-socket", "--bind-to", "core", "true"}, `^mpirun: --bind-to-socket and --bind-to core contradict each other`},
		{[]string{"--mca", "btl.tcp", "x", "true"}, `^mpirun: --mca "btl.tcp" "x": want --mca KEY VALUE, KEY of letters, digits and '_'`},
		{[]string{"-np", "5", "true"}, `^mpirun: -np 5 exceeds the 1 slot available; use --oversubscribe to allow it \(hosts from .*hostfile\)`},
	}
	for _, tc := range cases {
		t.Run(tc.args[0], func(t *testing.T) {
			res := mpirun(t, c, tc.args...)
			if res.status != statusUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.status, statusUsage, res.stderr)
			}
			checkOneLine(t, res.stderr, tc.line)
		})
	}
}

// TestDisplayAndVersion: --display-allocation and --display-map print
// readable tables on stderr (stdout is the ranks'), the allocation also
// how the daemons start; --version answers.
func TestDisplayAndVersion(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	res := mpirun(t, c, "--display-allocation", "--display-map", "-np", "2", "true", ":", "-np", "1", "true")
	if res.status != 0 || res.stdout != "" {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	want := "mpirun: allocation (hosts from " + c.HostfilePath() + "):\n" +
		"    node001  slots=2\n    node002  slots=2\n" +
		"mpirun: map: 3 ranks on 2 nodes\n" +
		"    node001  ranks 0-1  program 1\n    node002  ranks 2    program 2\n" +
		"mpirun: daemons start through ssh\n"
	if res.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", res.stderr, want)
	}
	res = mpirun(t, c, "--version")
	if res.status != 0 || !strings.Contains(res.stdout, "prsh") {
		t.Errorf("--version: exit %d, stdout %q", res.status, res.stdout)
	}
	res = mpirun(t, c, "--help")
	if res.status != 0 || !strings.HasPrefix(res.stdout, "Usage: mpirun [options] COMMAND") || strings.Contains(res.stdout, "(default: false)") {
		t.Errorf("--help: exit %d, stdout:\n%s", res.status, res.stdout)
	}
}

// TestWarningsReadAsMessages: a warning from mpirun's ssh client reads
// "mpirun: warning: …", not as a log line.
func TestWarningsReadAsMessages(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	base, err := os.ReadFile(c.SSHConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(config, []byte("Host node001\n    IdentityFile /no/such/key\n"+string(base)), 0o644)
	res := mpirun(t, c, "--ssh-config", config, "/bin/true")
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: warning: identity file not found: file=/no/such/key$`)
}

// TestAppfile: --app FILE is the programs of an MPMD job, one per line.
func TestAppfile(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	dir := t.TempDir()
	appfile := filepath.Join(dir, "app")
	os.WriteFile(appfile, []byte("# two programs\n-np 1 -x WHO=a printenv WHO\n\n-n 2 -env WHO b printenv WHO\n"), 0o644)
	res := mpirun(t, c, "--app", appfile)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	if got := lines(res.stdout); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"a", "b", "b"}) {
		t.Errorf("stdout %q, want a, b, b", got)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("-np 1 printenv\n--bogus 2 x\n"), 0o644)
	res = mpirun(t, c, "--app", bad)
	if res.status != statusUsage {
		t.Errorf("exit %d, want %d", res.status, statusUsage)
	}
	checkOneLine(t, res.stderr, `^mpirun: `+bad+`:2: unknown option --bogus`)
}

// TestBareLocalRun: with no hosts anywhere, mpirun runs on this host
// with a slot per CPU, without ssh, and says so when -np asks for more.
func TestBareLocalRun(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	cpus := runtime.NumCPU()
	res := mpirunInAllocation(t, c, nil, "sh", "-c", `echo "$PRSH_RANK $PRSH_NODE"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range cpus {
		want = append(want, itoa(r)+" localhost")
	}
	wantSet(t, res.stdout, want...)
	if c.Sessions() != 0 {
		t.Errorf("%d ssh sessions for a local run", c.Sessions())
	}
	res = mpirunInAllocation(t, c, nil, "-np", itoa(cpus+1), "/bin/true")
	if res.status != statusUsage {
		t.Errorf("exit %d, want %d", res.status, statusUsage)
	}
	checkOneLine(t, res.stderr, `^mpirun: -np `+itoa(cpus+1)+` exceeds the `+job.Slots(cpus)+` available; use --oversubscribe to allow it \(no hosts given: localhost with `+job.Slots(cpus)+`\)`)
}

// TestLocalhostInHostList: this host inside a host list of several runs
// its daemon as a child of mpirun, forked, not over ssh (the testbed's ssh
// config knows no localhost; its sessions name their node): wherever it
// stands in the list, at any spawn degree, and with the ranks where the
// list put them. Naming this host twice is a usage error.
func TestLocalhostInHostList(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	self, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	checkPlacements(t, c, []placement{
		{"localhost last, degree 1", []string{"-H", "node001,node002,localhost", "--spawn-degree", "1"},
			[]string{"0 node001", "1 node002", "2 "}, ""},
		{"localhost between, by node", []string{"-H", "node001:2,localhost:2,node003", "--map-by", "node", "-np", "5", "--routed", "binomial"},
			[]string{"0 node001", "1 ", "2 node003", "3 node001", "4 "}, ""},
		{"own name first", []string{"-H", self + ",node002", "--spawn-degree", "0", "--hold-launch"},
			[]string{"0 ", "1 node002"}, ""},
	})
	res := mpirun(t, c, "-H", "localhost,node001,"+self, "true")
	if res.status != 2 || !strings.Contains(res.stderr, "are both this host") {
		t.Errorf("this host named twice: exit %d, want 2; stderr:\n%s", res.status, res.stderr)
	}
}

// TestHostfileRanges: a hostfile names hosts with Slurm-style ranges as
// -H does: each host of a range gets the line's slots, hosts keep the
// order of their first mention, and a host named again adds slots.
func TestHostfileRanges(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	ranges := writeHostfile(t, "node[001-003] slots=2\n")
	repeats := writeHostfile(t, "# a list in brackets, a repeat\nnode[001-002] slots=2\nnode[003,001]\n")
	checkPlacements(t, c, []placement{
		{"range with slots", []string{"--hostfile", ranges},
			[]string{"0 node001", "1 node001", "2 node002", "3 node002", "4 node003", "5 node003"}, ""},
		{"list and repeat", []string{"--hostfile", repeats},
			[]string{"0 node001", "1 node001", "2 node001", "3 node002", "4 node002", "5 node003"}, ""},
	})
}

// TestHostRangeBound: a range that expands past hostrange.MaxHosts, or
// ranges that do so together, stop mpirun with one line and exit 2, from
// -H and from a hostfile (naming its line), before any node is reached.
func TestHostRangeBound(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	hostfile := writeHostfile(t, "node001\nnode[1-999999] slots=2\n")
	cases := []struct {
		name string
		args []string
		line string
	}{
		{"-H", []string{"-H", "node[1-999999]"},
			`^mpirun: host list entry "node\[1-999999\]": .*range "1-999999" expands to more than 262144 hosts \(see mpirun --help\)$`},
		{"-H in all", []string{"-H", "a[1-200000],b[1-200000]"},
			`^mpirun: host list entry "b\[1-200000\]": more than 262144 hosts in all \(see mpirun --help\)$`},
		{"hostfile", []string{"--hostfile", hostfile},
			`^mpirun: ` + regexp.QuoteMeta(hostfile) + `:2: "node\[1-999999\]": range "1-999999" expands to more than 262144 hosts \(see mpirun --help\)$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(tc.args, "true")...)
			if res.status != statusUsage {
				t.Errorf("exit %d, want %d", res.status, statusUsage)
			}
			checkOneLine(t, res.stderr, tc.line)
			if n := c.Sessions(); n != 0 {
				t.Errorf("%d ssh sessions before the error", n)
			}
		})
	}
}

func writeHostfile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadInput: every mistake gets one clear line and a non-zero exit,
// never a panic, a hang or a half-launched job.
func TestBadInput(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dir := t.TempDir()
	badHostfile := filepath.Join(dir, "hosts")
	os.WriteFile(badHostfile, []byte("node001 slots=2\nnode002 slots=two\n"), 0o644)
	notExecutable := filepath.Join(dir, "script")
	os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644)
	cases := []struct {
		name   string
		args   []string
		status int
		line   string
	}{
		{"hostfile syntax error", []string{"--hostfile", badHostfile, "/bin/true"}, 2, `^mpirun: .*hosts:2: .*two`},
		{"missing hostfile", []string{"--hostfile", filepath.Join(dir, "none"), "/bin/true"}, 2, `^mpirun: .*no such file`},
		{"empty host list", []string{"-H", "", "/bin/true"}, 2, `^mpirun: .*empty host list`},
		{"np zero", []string{"-np", "0", "/bin/true"}, 2, `^mpirun: -np must be at least 1, not 0`},
		{"np negative", []string{"-np", "-3", "/bin/true"}, 2, `^mpirun: -np must be at least 1, not -3`},
		{"negative spawn degree", []string{"--spawn-degree", "-1", "/bin/true"}, 2, `^mpirun: --spawn-degree must be 0 or more, or auto, not -1`},
		{"spawn degree not a number", []string{"--spawn-degree", "fast", "/bin/true"}, 2, `^mpirun: --spawn-degree must be 0 or more, or auto, not fast`},
		{"auto without a hop", []string{"--spawn-degree", "auto", "--spawn-hop-hint", "0s", "/bin/true"}, 2, `^mpirun: --spawn-hop-hint must be positive`},
		{"unknown routed", []string{"--routed", "mesh", "/bin/true"}, 2, `^mpirun: unknown routing topology "mesh" \(choose one of radix, binomial, direct\)`},
		{"unknown flag", []string{"--no-such-flag", "/bin/true"}, 2, `^mpirun: .*no-such-flag`},
		{"no command", []string{}, 2, `^mpirun: no command given`},
		{"bad --stdin", []string{"--stdin", "7", "/bin/true"}, 2, `^mpirun: --stdin "7": want a rank from 0 to 1, all or none`},
		{"bad --timeout", []string{"--timeout", "soon", "/bin/true"}, 2, `^mpirun: --timeout "soon"`},
		{"zero connect timeout", []string{"--ssh-connect-timeout", "0s", "/bin/true"}, 2, `^mpirun: --ssh-connect-timeout must be positive, not 0s`},
		{"negative callback timeout", []string{"--callback-timeout", "-1s", "/bin/true"}, 2, `^mpirun: --callback-timeout must be positive, not -1s`},
		{"negative kill grace", []string{"--kill-grace", "-2s", "/bin/true"}, 2, `^mpirun: --kill-grace must be 0 or more, not -2s`},
		{"no ssh sessions", []string{"--ssh-max-sessions", "0", "/bin/true"}, 2, `^mpirun: --ssh-max-sessions must be at least 1, not 0`},
		{"executable missing", []string{"/no/such/program"}, 127, `^mpirun: node00[12]: rank [01]: cannot run /no/such/program: no such file or directory$`},
		{"not executable", []string{notExecutable}, 126, `^mpirun: node00[12]: rank [01]: cannot run .*/script: permission denied$`},
		{"working directory missing", []string{"--wdir", "/no/such/dir", "/bin/true"}, 255, `^mpirun: node00[12]: rank [01]: working directory /no/such/dir does not exist$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, tc.args...)
			if res.status != tc.status {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.status, tc.status, res.stderr)
			}
			checkOneLine(t, res.stderr, tc.line)
		})
	}
}
