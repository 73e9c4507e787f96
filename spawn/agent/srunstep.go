package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"prsh/job/hostrange"
)

// Group is an Agent that can also start the orteds of many hosts with one
// call: the same argv and stdin for every host, each orted finding out
// which one it is where it runs.
type Group interface {
	Agent
	// StartGroup starts argv on every host of hosts and returns one
	// Process per host, in the order of hosts. An error means none
	// started.
	StartGroup(ctx context.Context, hosts []string, argv []string, stdin []byte) ([]Process, error)
}

// SrunStep is the Agent inside a Slurm allocation that starts the orteds
// of all hosts as ONE job step, one task per node: one step creation at
// slurmctld however many nodes, and Slurm's own fan-out to the slurmd's,
// as Open MPI's, Hydra's and PRRTE's launchers do. Each orted takes its
// identity from Slurm (orted --slurm-step: SLURMD_NODENAME looked up in
// the hosts table that follows the secret on stdin).
//
// Its options are Srun's, and: srun's stdin goes to every task
// (--input=all), so that the secret reaches all and closing it ends them
// all (their lifeline); --label tells the tasks' lines apart (the orted's
// first line names its node, StepAlivePrefix, and srun's report of a
// failed task names its node), so each host's Process gets its own sign
// of life, stderr and exit; one node's failure ends only its task
// (--kill-on-bad-exit=0 and --wait=0, whatever slurm.conf says), so that
// --on-unreachable skip works.
//
// A step is one srun: Close or Kill of one host's Process cannot end that
// host's task alone (the orted ends itself when its link to mpirun goes);
// it returns once that task has ended. When every host's Process is
// closed, or its task ended, srun's stdin closes, and srun gets Close's
// grace before it is killed (at once if any was a Kill), which ends the
// step's tasks on every node.
type SrunStep struct {
	// JobID is the allocation's SLURM_JOB_ID; "" lets srun take it
	// from its environment.
	JobID string
	// Path is the srun to run; "" = srun from PATH.
	Path string
	// Logger gets srun's output at debug level; nil discards.
	Logger hclog.Logger
}

var _ Group = (*SrunStep)(nil)

// Argv returns srun's command line for running argv on every host, one
// task each.
func (s *SrunStep) Argv(hosts []string, argv []string) []string {
	out := srunCommand(s.Path, s.JobID)
	n := strconv.Itoa(len(hosts))
	out = append(out, "--overlap", "--mpi=none", "--cpu-bind=none",
		"--nodes="+n, "--ntasks="+n, "--ntasks-per-node=1", "--nodelist="+hostrange.Ranges(hosts),
		"--kill-on-bad-exit=0", "--wait=0", "--input=all", "--label", "--job-name=orted", "--quiet")
	return append(out, argv...)
}

// Start implements Agent: a step of one task.
func (s *SrunStep) Start(ctx context.Context, host string, argv []string, stdin []byte) (Process, error) {
	ps, err := s.StartGroup(ctx, []string{host}, argv, stdin)
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// StartGroup implements Group.
func (s *SrunStep) StartGroup(ctx context.Context, hosts []string, argv []string, stdin []byte) ([]Process, error) {
	if len(argv) == 0 || len(hosts) == 0 {
		return nil, errors.New("srun: empty argv or no hosts")
	}
	full := s.Argv(hosts, argv)
	log := orNull(s.Logger)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = withoutSSHSession(os.Environ())
	if err := takeTurn(ctx); err != nil {
		return nil, err
	}
	defer PassTurn(ctx)
	st, err := startStep(ctx, cmd, hosts, stdin, log)
	if err != nil {
		return nil, err
	}
	ps := make([]Process, len(st.tasks))
	for i, t := range st.tasks {
		ps[i] = t
	}
	return ps, nil
}

// String describes the agent for -v and --display-allocation.
func (s *SrunStep) String() string {
	if s.JobID == "" {
		return "srun, one job step for all daemons"
	}
	return "srun, one job step for all daemons in Slurm job " + s.JobID
}
