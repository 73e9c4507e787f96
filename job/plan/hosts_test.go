package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestHostSources: -H, else --hostfile, else MPIRUN_HOSTFILE, else
// Hydra's HYDRA_HOST_FILE, else the batch allocation, else Open MPI's
// default hostfile, else this host with a slot per CPU; each named as
// --display-allocation names it, followed by how the daemons start.
func TestHostSources(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	flag, mine, hydra, ompi := file("flag", "f1 slots=2\n"), file("mine", "m1\n"), file("hydra", "h1:3\n"), file("ompi", "o1\n")
	cases := []struct {
		name     string
		hosts    []string
		hostfile string
		environ  []string
		want     string
	}{
		{"-H first", []string{"a:2", "b"}, flag, []string{"MPIRUN_HOSTFILE=" + mine},
			"mpirun: allocation (hosts from -H):\n    a  slots=2\n    b  slots=1\n"},
		{"--hostfile", nil, flag, []string{"MPIRUN_HOSTFILE=" + mine},
			"mpirun: allocation (hosts from " + flag + "):\n    f1  slots=2\n"},
		{"MPIRUN_HOSTFILE", nil, "", []string{"HYDRA_HOST_FILE=" + hydra, "MPIRUN_HOSTFILE=" + mine, "SLURM_JOB_NODELIST=s1"},
			"mpirun: allocation (hosts from " + mine + "):\n    m1  slots=1\n"},
		{"HYDRA_HOST_FILE", nil, "", []string{"HYDRA_HOST_FILE=" + hydra, "SLURM_JOB_NODELIST=s1"},
			"mpirun: allocation (hosts from " + hydra + "):\n    h1  slots=3\n"},
		{"batch before Open MPI's default", nil, "", []string{"OMPI_MCA_orte_default_hostfile=" + ompi, "SLURM_JOB_NODELIST=s[1-2]", "SLURM_TASKS_PER_NODE=2(x2)"},
			"mpirun: allocation (hosts from the batch allocation of Slurm (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE)):\n    s1  slots=2\n    s2  slots=2\n"},
		{"Open MPI's default", nil, "", []string{"OMPI_MCA_orte_default_hostfile=" + ompi},
			"mpirun: allocation (hosts from " + ompi + " (OMPI_MCA_orte_default_hostfile)):\n    o1  slots=1\n"},
		{"Open MPI's none", nil, "", []string{"OMPI_MCA_orte_default_hostfile=none"},
			"mpirun: allocation (no hosts given: localhost with 4 slots):\n    localhost  slots=4\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults(tc.hosts...)
			req.Hostfile, req.DisplayAllocation = tc.hostfile, true
			req.LaunchAgent, req.ListenIP = "ssh %h", "10.0.0.1"
			var stderr bytes.Buffer
			if _, err := Make(req, launchNode(&stderr, tc.environ...)); err != nil {
				t.Fatal(err)
			}
			if got, want := stderr.String(), tc.want+"mpirun: daemons start through the launch agent ssh %h\n"; got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestDisplayMap: which ranks each node runs, and their programs when
// there are several.
func TestDisplayMap(t *testing.T) {
	req := defaults("a:3,b:3")
	req.Args, req.NP, req.NPSet = []string{"x", ":", "-np", "3", "y"}, 2, true
	req.DisplayMap, req.LaunchAgent, req.ListenIP = true, "ssh %h", "10.0.0.1"
	_, stderr := make1(t, req)
	want := "mpirun: map: 5 ranks on 2 nodes\n    a  ranks 0-2  program 1, program 2\n    b  ranks 3-4  program 2\n"
	if stderr != want {
		t.Errorf("got\n%s\nwant\n%s", stderr, want)
	}
}

// TestDisplayMapSpareHosts: hosts that get no rank are listed as getting
// no orted either, unless --every-host keeps one on each.
func TestDisplayMapSpareHosts(t *testing.T) {
	req := defaults("a:2,b:2,c:2")
	req.Args, req.NP, req.NPSet = []string{"x"}, 2, true
	req.DisplayMap, req.LaunchAgent, req.ListenIP = true, "ssh %h", "10.0.0.1"
	_, stderr := make1(t, req)
	want := "mpirun: map: 2 ranks on 1 node\n    a  ranks 0-1\n    b  no rank: no orted (--every-host starts one)\n" +
		"    c  no rank: no orted (--every-host starts one)\n"
	if stderr != want {
		t.Errorf("got\n%s\nwant\n%s", stderr, want)
	}
	req.EveryHost = true
	_, stderr = make1(t, req)
	want = "mpirun: map: 2 ranks on 3 nodes\n    a  ranks 0-1\n    b  ranks none\n    c  ranks none\n"
	if stderr != want {
		t.Errorf("--every-host: got\n%s\nwant\n%s", stderr, want)
	}
}
