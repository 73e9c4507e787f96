package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Srun is the Agent inside a Slurm allocation: each orted is a one-task
// job step of its own on its node, started by its parent in the spawn
// tree (mpirun, or an orted that is itself such a step), so that Slurm
// tracks, accounts and cleans up every daemon and its ranks.
//
// The options say why they are there (Argv): the step shares the
// allocation's CPUs (--overlap), so it never holds back the user's other
// steps, nor a second mpirun, while the job runs; it gets no PMI of
// Slurm's (--mpi=none) and no binding (--cpu-bind=none), its ranks get
// ours; srun's stdin, the secret and then the lifeline, goes to the
// step's one task (--input=0); --ntasks-per-node overrides an
// allocation's own (salloc --ntasks-per-node exports it); --quiet keeps
// srun's notes out of a failure's message. srun execs the argv itself: no
// shell, no quoting.
type Srun struct {
	// JobID is the allocation's SLURM_JOB_ID, whose steps the daemons
	// are; "" lets srun take it from its environment.
	JobID string
	// Path is the srun to run; "" = srun from PATH.
	Path string
	// Logger gets srun's output at debug level; nil discards.
	Logger hclog.Logger
}

var _ Agent = (*Srun)(nil)

// Argv returns srun's command line for running argv on host.
func (s *Srun) Argv(host string, argv []string) []string {
	out := srunCommand(s.Path, s.JobID)
	out = append(out, "--overlap", "--mpi=none", "--cpu-bind=none",
		"--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--nodelist="+host,
		"--input=0", "--job-name=orted", "--quiet")
	return append(out, argv...)
}

// srunCommand is srun (path, or srun from PATH) for a step of job (or
// the job srun takes from its environment when "").
func srunCommand(path, job string) []string {
	if path == "" {
		path = "srun"
	}
	out := []string{path}
	if job != "" {
		out = append(out, "--jobid="+job)
	}
	return out
}

// Start implements Agent.
func (s *Srun) Start(ctx context.Context, host string, argv []string, stdin []byte) (Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("srun: empty argv")
	}
	full := s.Argv(host, argv)
	log := orNull(s.Logger).With("host", host)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = withoutSSHSession(os.Environ())
	if err := takeTurn(ctx); err != nil {
		return nil, err
	}
	defer PassTurn(ctx)
	p, err := startExec(ctx, cmd, stdin, log)
	if err != nil {
		return nil, err
	}
	return srunProcess{p}, nil
}

// srunProcess is a started srun, whose failure reads as one line.
type srunProcess struct{ Process }

// Wait implements Process: srun's tail of stderr loses its report of the
// task's exit status (the ExitError has it), its note that --cpu-bind
// has nothing to do (a cluster without task/affinity, which --quiet does
// not silence) and the prefix of the node's slurmstepd (the caller names
// the node); what is left joins into one line, such as "execve():
// /x/orted: No such file or directory".
func (p srunProcess) Wait() error {
	err := p.Process.Wait()
	var xe *ExitError
	if !errors.As(err, &xe) {
		return err
	}
	var lines []string
	for _, line := range strings.Split(xe.Stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || taskExitLine().MatchString(line) || line == noCPUBinding {
			continue
		}
		lines = append(lines, stepdPrefix().ReplaceAllString(line, ""))
	}
	short := *xe
	short.Stderr = strings.Join(lines, "; ")
	return &short
}

var (
	// taskExitLine is srun's report of a task's end:
	// "srun: error: node2: task 0: Exited with exit code 2".
	taskExitLine = lazyRegexp(`^srun: error: \S+: tasks? [0-9,-]+: `)
	// stepdPrefix begins a line of the node's slurmstepd:
	// "slurmstepd-node2: error: ".
	stepdPrefix = lazyRegexp(`^slurmstepd(-\S+)?: (error: )?`)
)

// noCPUBinding is srun's note on --cpu-bind=none where Slurm binds no
// task anyway.
const noCPUBinding = "srun: cluster configuration lacks support for cpu binding"

// String describes the agent for -v and --display-allocation.
func (s *Srun) String() string {
	if s.JobID == "" {
		return "srun, a job step per daemon"
	}
	return "srun, a job step per daemon in Slurm job " + s.JobID
}
