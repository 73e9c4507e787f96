package ranks

import (
	"slices"
	"strconv"
	"strings"
)

// slurmTaskEnv makes a rank of a daemon inside a Slurm job (SLURM_JOB_ID
// in env, the rank's environment so far) look like a task of srun's, as
// tools and scripts read it: its rank, the job's size, its place on its
// node and its node's in the job. The variables of the daemon's own job
// step (a step of one task on one node, when srun started it) would be
// false for the rank and go: the step's id, nodes, tasks and launcher,
// its CPU binding (--cpu-bind=none), the daemon's pid. Outside Slurm env
// is returned as it is.
func (req Request) slurmTaskEnv(env []string, local int) []string {
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SLURM_JOB_ID=") }) {
		return env
	}
	env = slices.DeleteFunc(slices.Clone(env), isStepVar)
	set := func(k string, v int) string { return k + "=" + strconv.Itoa(v) }
	return append(env,
		set("SLURM_PROCID", req.Ranks[local].ID), set("SLURM_NTASKS", req.Size), set("SLURM_NPROCS", req.Size),
		set("SLURM_LOCALID", local), set("SLURM_NODEID", max(req.NodeID-1, 0)), set("SLURM_NNODES", req.Nodes),
		"SLURM_GTIDS="+req.gtids,
	)
}

// gtids lists the node's ranks as SLURM_GTIDS does.
func gtids(ranks []Rank) string {
	ids := make([]string, len(ranks))
	for i, r := range ranks {
		ids[i] = strconv.Itoa(r.ID)
	}
	return strings.Join(ids, ",")
}

// stepVars are the variables of a job step that name the step itself or
// its tasks (those a rank gets anew among them); stepPrefixes begin
// families of them.
var (
	stepVars = []string{
		"SLURM_STEPID", "SLURM_TASKS_PER_NODE", "SLURM_TASK_PID", "SLURM_SRUN_COMM_HOST",
		"SLURM_SRUN_COMM_PORT", "SLURM_DISTRIBUTION", "SLURM_LAUNCH_NODE_IPADDR",
		"SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NODEID",
		"SLURM_NNODES", "SLURM_GTIDS",
	}
	stepPrefixes = []string{"SLURM_STEP_", "SLURM_CPU_BIND"}
)

func isStepVar(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	if slices.Contains(stepVars, name) {
		return true
	}
	for _, p := range stepPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
