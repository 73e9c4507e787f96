package ranks

import (
	"reflect"
	"testing"
)

// TestSlurmTaskEnv: inside a Slurm job each rank gets what srun gives its
// tasks, and loses the daemon's own step's variables; outside Slurm the
// environment is left alone.
func TestSlurmTaskEnv(t *testing.T) {
	req := Request{NodeID: 3, Size: 8, Nodes: 4, Ranks: []Rank{{ID: 4}, {ID: 5}}}
	req.gtids = gtids(req.Ranks)
	step := []string{
		"HOME=/root", "SLURM_JOB_ID=9", "SLURM_JOB_NODELIST=node[1-4]", "SLURMD_NODENAME=node3",
		"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_NNODES=1", "SLURM_STEP_ID=2", "SLURM_STEPID=2",
		"SLURM_STEP_NODELIST=node3", "SLURM_TASKS_PER_NODE=1", "SLURM_CPU_BIND=quiet,none",
		"SLURM_CPU_BIND_TYPE=none", "SLURM_TASK_PID=80", "SLURM_SRUN_COMM_PORT=1", "SLURM_DISTRIBUTION=cyclic",
	}
	want := []string{
		"HOME=/root", "SLURM_JOB_ID=9", "SLURM_JOB_NODELIST=node[1-4]", "SLURMD_NODENAME=node3",
		"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_NPROCS=8", "SLURM_LOCALID=1", "SLURM_NODEID=2",
		"SLURM_NNODES=4", "SLURM_GTIDS=4,5",
	}
	if got := req.slurmTaskEnv(step, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("in a step:\n got %q\nwant %q", got, want)
	}
	outside := []string{"HOME=/root", "SLURM_PROCID=0"}
	if got := req.slurmTaskEnv(outside, 1); !reflect.DeepEqual(got, outside) {
		t.Errorf("outside Slurm: got %q, want it unchanged", got)
	}
}
