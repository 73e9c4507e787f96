package plan

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// rankSees is what a rank finds of names when its orted puts env on top
// of orted (the orted's own settings for Open MPI ranks): later entries
// win, as in the ranks' environment.
func rankSees(env []string, orted map[string]string, names ...string) string {
	vars := map[string]string{}
	for k, v := range orted {
		vars[k] = v
	}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		vars[name] = value
	}
	var out []string
	for _, name := range names {
		out = append(out, name+"="+vars[name])
	}
	return strings.Join(out, " ")
}

// TestForwarding: nothing of mpirun's environment by default but its
// OMPI_* (as Open MPI's mpirun), -x with globs, Hydra's -genv family,
// and a warning for what -x names but mpirun lacks. The end-to-end
// TestEnvironmentForwarding checks that the ranks see it.
func TestForwarding(t *testing.T) {
	environ := []string{"HABIT_A=a,1", "HABIT_B=b 2", "OTHER=o"}
	cases := []struct {
		name    string
		env     Environment
		want    string
		warning string
	}{
		{"default", Environment{}, "HABIT_A= HABIT_B= G=", ""},
		{"glob", Environment{X: []string{"HABIT_*"}}, "HABIT_A=a,1 HABIT_B=b 2 G=", ""},
		{"genv", Environment{Genv: []string{"G=x, y"}, Genvlist: []string{"HABIT_A,HABIT_B"}}, "HABIT_A=a,1 HABIT_B=b 2 G=x, y", ""},
		{"genvall", Environment{Genvall: true, Genv: []string{"HABIT_B=over"}}, "HABIT_A=a,1 HABIT_B=over G=", ""},
		{"genvnone", Environment{Genvnone: true, X: []string{"G=1"}}, "HABIT_A= HABIT_B= G=1", ""},
		{"unset", Environment{X: []string{"HABIT_UNSET"}}, "HABIT_A= HABIT_B= G=",
			"mpirun: warning: -x HABIT_UNSET: not set in mpirun's environment, so not exported\n"},
		{"glob matching nothing", Environment{X: []string{"NO_HABIT_*"}}, "HABIT_A= HABIT_B= G=",
			"mpirun: warning: -x NO_HABIT_*: no variable of mpirun's environment matches\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults("localhost:3")
			req.Environment = tc.env
			cfg, stderr := make1(t, req, environ...)
			if got := rankSees(cfg.App.Env, nil, "HABIT_A", "HABIT_B", "G"); got != tc.want {
				t.Errorf("ranks see %s, want %s", got, tc.want)
			}
			if stderr != tc.warning {
				t.Errorf("stderr %q, want %q", stderr, tc.warning)
			}
		})
	}
}

// TestOpenMPIForwarding: mpirun's OMPI_* variables reach the ranks, as
// Open MPI's mpirun forwards them, and nothing else of its environment;
// --mca KEY VALUE reaches them as OMPI_MCA_KEY, -x wins over both, and
// -genvnone stops the forwarded ones. The orteds' own settings for Open
// MPI ranks (OMPI_MCA_ess=pmi) keep their values unless -x or --mca sets
// them, and the state of another Open MPI job (as when one of its ranks
// runs mpirun) stays behind. The end-to-end TestOpenMPIVariablesForwarded
// checks the ranks see it.
func TestOpenMPIForwarding(t *testing.T) {
	environ := []string{"OMPI_MCA_btl_tcp_if_include=lo,eth0", "OMPI_MCA_ess=env", "OMPI_MCA_orte_hnp_uri=1.0;tcp://10.0.0.1:1", "NOT_OMPI=x"}
	orted := map[string]string{"OMPI_MCA_ess": "pmi"}
	cases := []struct {
		name string
		env  Environment
		want string
	}{
		{"default", Environment{}, "btl=lo,eth0 ess=pmi uri= other="},
		{"-x wins", Environment{X: []string{"OMPI_MCA_btl_tcp_if_include=ib0", "OMPI_MCA_ess"}}, "btl=ib0 ess=env uri= other="},
		{"genvall", Environment{Genvall: true}, "btl=lo,eth0 ess=pmi uri= other=x"},
		{"genvnone", Environment{Genvnone: true}, "btl= ess=pmi uri= other="},
		{"--mca", Environment{MCA: []string{"btl_tcp_if_include=ib1,ib2"}, GMCA: []string{"ess=env"}}, "btl=ib1,ib2 ess=env uri= other="},
		{"-x wins over --mca", Environment{MCA: []string{"btl_tcp_if_include=ib1"}, X: []string{"OMPI_MCA_btl_tcp_if_include=ib2"}}, "btl=ib2 ess=pmi uri= other="},
		{"Hydra's -env", Environment{Env: []string{"NOT_OMPI=y"}}, "btl=lo,eth0 ess=pmi uri= other=y"},
		{"Hydra's -envlist", Environment{Envlist: []string{"NOT_OMPI"}, FirstProgramFlags: []string{"envlist"}}, "btl=lo,eth0 ess=pmi uri= other=x"},
		{"Hydra's -envall", Environment{Envall: true, FirstProgramFlags: []string{"envall"}}, "btl=lo,eth0 ess=pmi uri= other=x"},
		{"Hydra's -envnone", Environment{Envnone: true, FirstProgramFlags: []string{"envnone"}}, "btl= ess=pmi uri= other="},
		{"--mca wins over -gmca", Environment{MCA: []string{"ess=env"}, GMCA: []string{"ess=singleton"}}, "btl=lo,eth0 ess=env uri= other="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults("localhost:2")
			req.Environment = tc.env
			cfg, stderr := make1(t, req, environ...)
			got := rankSees(cfg.App.Env, orted, "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_ess", "OMPI_MCA_orte_hnp_uri", "NOT_OMPI")
			want := strings.NewReplacer("btl=", "OMPI_MCA_btl_tcp_if_include=", "ess=", "OMPI_MCA_ess=",
				"uri=", "OMPI_MCA_orte_hnp_uri=", "other=", "NOT_OMPI=").Replace(tc.want)
			if got != want || stderr != "" {
				t.Errorf("ranks see %s, want %s; stderr %q", got, want, stderr)
			}
		})
	}
}

// TestLeftBehind: -genvall forwards neither mpirun's session, nor
// another job's state, nor what the orteds set for Open MPI ranks.
func TestLeftBehind(t *testing.T) {
	environ := []string{"PWD=/x", "SSH_CLIENT=1", "SLURM_JOB_ID=4", "PMI_RANK=0", "OMPI_COMM_WORLD_RANK=3",
		"OMPI_MCA_orte_ess_num_procs=2", "OMPI_MCA_pmix=isolated", "OMPI_MCA_orte_top_session_dir=/tmp/x", "B=2", "A=1"}
	req := defaults("localhost")
	req.Environment.Genvall = true
	cfg, _ := make1(t, req, environ...)
	if want := []string{"A=1", "B=2"}; !slices.Equal(cfg.App.Env, want) {
		t.Errorf("-genvall forwards %q, want %q", cfg.App.Env, want)
	}
}

// TestLauncherParameterWarned: a --mca of Open MPI's launcher still
// reaches the ranks, with a warning saying what to use instead.
func TestLauncherParameterWarned(t *testing.T) {
	req := defaults("localhost")
	req.Environment.MCA = []string{"plm_rsh_agent=rsh"}
	cfg, stderr := make1(t, req)
	if want := "mpirun: warning: --mca plm_rsh_agent is a parameter of Open MPI's own launcher, which prsh replaces: use --launch-agent 'CMD %h'\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if !slices.Equal(cfg.App.Env, []string{"OMPI_MCA_plm_rsh_agent=rsh"}) {
		t.Errorf("env %q", cfg.App.Env)
	}
}

// TestProgramsEnvironment: each program gets the job's environment under
// its own -x, -env and --mca; Hydra's -env before the first program is
// that program's alone.
func TestProgramsEnvironment(t *testing.T) {
	req := defaults("localhost:3")
	req.Args = []string{"a", ":", "-np", "2", "-x", "OWN", "-env", "E", "b", "--mca", "k", "v", "b"}
	req.NP, req.NPSet = 1, true
	req.Environment = Environment{X: []string{"J=1"}, Env: []string{"FIRST=1"}}
	var stderr bytes.Buffer
	cfg, err := Make(req, launchNode(&stderr, "OWN=o"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"J=1", "FIRST=1"}; !slices.Equal(cfg.App.Env, want) {
		t.Errorf("first program's env %q, want %q", cfg.App.Env, want)
	}
	if want := []string{"J=1", "OWN=o", "E=b", "OMPI_MCA_k=v"}; len(cfg.App.More) != 1 || !slices.Equal(cfg.App.More[0].Env, want) {
		t.Errorf("second program %+v, want env %q", cfg.App.More, want)
	}
}
