package plan

import (
	"os/exec"
	"strings"
	"testing"

	"prsh/spawn/agent"
)

// TestSrunJob: inside a Slurm allocation whose hosts the job runs on, the
// daemons start through srun unless ssh or a launch agent is asked for;
// --launcher srun (or a peer's spelling) asks for srun wherever the
// job's hosts come from, and needs a Slurm job.
func TestSrunJob(t *testing.T) {
	inSlurm := []string{"SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-2]", "SLURM_TASKS_PER_NODE=2(x2)"}
	cases := []struct {
		name    string
		hosts   []string // -H; nil: the allocation, if any
		agent   string
		flag    string
		mca     []string
		environ []string
		want    string // the job id, or the error's start
	}{
		{"allocation", nil, "", "", nil, inSlurm, "7"},
		{"--launcher auto", nil, "", "auto", nil, inSlurm, "7"},
		{"hosts from -H", []string{"n1,n2"}, "", "", nil, inSlurm, ""},
		{"launch agent", nil, "ssh %h", "", nil, inSlurm, ""},
		{"--launcher ssh", nil, "", "ssh", nil, inSlurm, ""},
		{"Hydra's rsh", nil, "", "rsh", nil, inSlurm, ""},
		{"--mca plm rsh", nil, "", "", []string{"plm=rsh"}, inSlurm, ""},
		{"OMPI_MCA_plm", nil, "", "", nil, append([]string{"OMPI_MCA_plm=rsh"}, inSlurm...), ""},
		{"HYDRA_LAUNCHER", nil, "", "", nil, append([]string{"HYDRA_LAUNCHER=ssh"}, inSlurm...), ""},
		{"the flag before --mca", nil, "", "srun", []string{"plm=rsh"}, inSlurm, "7"},
		{"--launcher srun with -H", []string{"n1,n2"}, "", "srun", nil, inSlurm, "7"},
		{"Hydra's slurm", []string{"n1,n2"}, "", "slurm", nil, inSlurm, "7"},
		{"--mca plm slurm", []string{"n1,n2"}, "", "", []string{"plm=slurm"}, inSlurm, "7"},
		{"no Slurm", nil, "", "", nil, nil, ""},
		{"srun without Slurm", []string{"n1"}, "", "srun", nil, nil, "error: --launcher srun: not inside a Slurm allocation"},
		{"srun and an agent", nil, "ssh %h", "srun", nil, inSlurm, "error: --launcher srun and --launch-agent contradict"},
		{"unknown launcher", nil, "", "pbs", nil, inSlurm, `error: --launcher "pbs": want auto, ssh`},
		{"unknown plm", nil, "", "", []string{"plm=tm"}, inSlurm, `error: --mca plm "tm": want auto, ssh`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults(tc.hosts...)
			req.LaunchAgent, req.Launcher, req.Environment.MCA = tc.agent, tc.flag, tc.mca
			here := launchNode(nil, tc.environ...)
			src, err := hostList(req, here)
			if err != nil {
				t.Fatal(err)
			}
			got, err := srunJob(req, src, here.environ().getenv)
			if err != nil {
				got = "error: " + err.Error()
			}
			if got != tc.want && !(strings.HasPrefix(tc.want, "error: ") && strings.HasPrefix(got, tc.want)) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSrunAgent: in a Slurm allocation mpirun starts the other hosts'
// daemons through srun (and runs its own host's ranks): all in one job step,
// or an srun per spawn-tree edge when --spawn-degree is given or the
// hosts are not the allocation's; --display-allocation says which.
func TestSrunAgent(t *testing.T) {
	if _, err := exec.LookPath("srun"); err != nil {
		t.Skip("srun is not installed")
	}
	for _, tc := range []struct {
		name    string
		edit    func(*Request)
		oneStep bool
		says    string
	}{
		{"one step", func(*Request) {}, true, "one job step for all daemons"},
		{"--spawn-degree", func(r *Request) { r.SpawnDegree, r.SpawnDegreeSet = "2", true }, false, "a job step per daemon"},
		{"-H and --launcher srun", func(r *Request) { r.Hosts, r.Launcher = []string{"launch", "n2"}, "srun" }, false, "a job step per daemon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults()
			req.DisplayAllocation, req.ListenIP = true, "10.0.0.1"
			tc.edit(&req)
			cfg, stderr := make1(t, req, "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=launch,n2", "SLURM_TASKS_PER_NODE=1(x2)")
			if cfg.Job.SrunJob != "7" || cfg.Job.OneStep != tc.oneStep {
				t.Errorf("JobSpec.SrunJob = %q, OneStep = %v; want 7, %v", cfg.Job.SrunJob, cfg.Job.OneStep, tc.oneStep)
			}
			step, isStep := cfg.Agent.(*agent.SrunStep)
			edge, isEdge := cfg.Agent.(*agent.Srun)
			if isStep != tc.oneStep || (isStep && step.JobID != "7") || (isEdge && edge.JobID != "7") || !(isStep || isEdge) {
				t.Errorf("agent %#v, want srun in job 7, one step: %v", cfg.Agent, tc.oneStep)
			}
			want := "mpirun: daemons start through srun, " + tc.says + " in Slurm job 7, and mpirun runs the ranks of this host\n"
			if !strings.HasSuffix(stderr, want) {
				t.Errorf("--display-allocation:\n%s\nwant it to end with\n%s", stderr, want)
			}
		})
	}
}
