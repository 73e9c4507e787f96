package e2e

import (
	"testing"

	"prsh/testbed"
)

// TestEnvironmentForwarding: nothing of mpirun's environment by default
// (but its OMPI_*: TestOpenMPIVariablesForwarded);
// -x with globs, Hydra's -genv family, a warning for what is not set, and
// the rank variables scripts read: 3 ranks on 2 nodes of 2 slots, so that
// the local rank and size differ between the nodes.
func TestEnvironmentForwarding(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	t.Setenv("HABIT_A", "a,1")
	t.Setenv("HABIT_B", "b 2")
	show := `echo "$PMI_RANK/$PMI_SIZE $OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE/$OMPI_COMM_WORLD_LOCAL_RANK/$OMPI_COMM_WORLD_LOCAL_SIZE/$OMPI_COMM_WORLD_NODE_RANK $MPI_LOCALRANKID/$MPI_LOCALNRANKS a=$HABIT_A b=$HABIT_B g=$G"`
	cases := []struct {
		name   string
		args   []string
		values string // after the rank variables
		stderr string
	}{
		{"default", nil, "a= b= g=", ""},
		{"glob", []string{"-x", "HABIT_*"}, "a=a,1 b=b 2 g=", ""},
		{"genv", []string{"-genv", "G", "x, y", "-genvlist", "HABIT_A,HABIT_B"}, "a=a,1 b=b 2 g=x, y", ""},
		{"genvall", []string{"-genvall", "-genv", "HABIT_B", "over"}, "a=a,1 b=over g=", ""},
		{"genvnone", []string{"-genvnone", "-x", "G=1"}, "a= b= g=1", ""},
		{"unset", []string{"-x", "HABIT_UNSET"}, "a= b= g=",
			`^mpirun: warning: -x HABIT_UNSET: not set in mpirun's environment, so not exported$`},
		{"glob matching nothing", []string{"-x", "NO_HABIT_*"}, "a= b= g=",
			`^mpirun: warning: -x NO_HABIT_\*: no variable of mpirun's environment matches$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(append([]string{"-np", "3"}, tc.args...), "sh", "-c", show)...)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			wantSet(t, res.stdout, "0/3 0/3/0/2/0 0/2 "+tc.values, "1/3 1/3/1/2/1 1/2 "+tc.values, "2/3 2/3/0/1/0 0/1 "+tc.values)
			checkOneLine(t, res.stderr, tc.stderr)
		})
	}
}

// TestOpenMPIVariablesForwarded: what the plan forwards meets the orteds'
// own settings for Open MPI ranks (OMPI_MCA_ess=pmi) on the nodes: mpirun's
// OMPI_* reach the ranks but those settings keep their values, and the
// state of another Open MPI job (as when one of its ranks runs mpirun)
// stays behind, unless -x or --mca sets them. The forwarding policy itself
// (-genvall, -genvnone, Hydra's -env family, which of -x, --mca and -gmca
// wins) is job/plan's TestOpenMPIForwarding, case by case.
func TestOpenMPIVariablesForwarded(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	t.Setenv("OMPI_MCA_btl_tcp_if_include", "lo,eth0")
	t.Setenv("OMPI_MCA_ess", "env")
	t.Setenv("OMPI_MCA_orte_hnp_uri", "1.0;tcp://10.0.0.1:1")
	t.Setenv("NOT_OMPI", "x")
	show := `echo "$PRSH_RANK btl=$OMPI_MCA_btl_tcp_if_include ess=$OMPI_MCA_ess uri=$OMPI_MCA_orte_hnp_uri other=$NOT_OMPI"`
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "btl=lo,eth0 ess=pmi uri= other="},
		{"-x wins", []string{"-x", "OMPI_MCA_btl_tcp_if_include=ib0", "-x", "OMPI_MCA_ess"}, "btl=ib0 ess=env uri= other="},
		{"--mca", []string{"--mca", "btl_tcp_if_include", "ib1,ib2", "-gmca", "ess", "env"}, "btl=ib1,ib2 ess=env uri= other="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(tc.args, "sh", "-c", show)...)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			wantSet(t, res.stdout, "0 "+tc.want, "1 "+tc.want)
			checkOneLine(t, res.stderr, "")
		})
	}
}

// TestOpenMPIKeepsOrtedSettings: an OMPI_MCA_pmix in mpirun's environment
// (here "isolated", which the orteds rule out: with it MPI_Init fails) does
// not replace what the orteds tell Open MPI ranks, so they still start
// and see one world.
func TestOpenMPIKeepsOrtedSettings(t *testing.T) {
	where := openMPI(t, "where")
	c := cluster(t, testbed.Config{Nodes: 2, UTS: true})
	t.Setenv("OMPI_MCA_pmix", "isolated")
	res := mpirun(t, c, where)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0 of 2 on node001", "rank 1 of 2 on node002"})
}

// TestRankEnvironmentFlags: -x VAR=value and -x VAR reach every rank,
// --wdir sets their working directory, and --routed-radix and --listen-ip
// still launch everywhere.
func TestRankEnvironmentFlags(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 5})
	dir := t.TempDir()
	t.Setenv("FROM_MPIRUN", "inherited")
	res := mpirun(t, c, "-x", "GREETING=hello world", "-x", "FROM_MPIRUN", "--wdir", dir,
		"--routed-radix", "2", "--listen-ip", "127.0.0.1",
		"sh", "-c", `echo "$PRSH_RANK $GREETING $FROM_MPIRUN $(pwd)"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := 0; r < 5; r++ {
		want = append(want, itoa(r)+" hello world inherited "+dir)
	}
	wantSet(t, res.stdout, want...)
}
