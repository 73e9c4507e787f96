package plan

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"prsh/daemon"
	"prsh/job/compat"
)

// The ranks' environment is their node's (what ssh gives orted) plus, as
// Open MPI's mpirun forwards them, mpirun's own OMPI_* variables, plus
// Open MPI's --mca parameters, plus what the user forwards: -x, Hydra's
// -genv, -genvlist and -genvall. -genvnone forwards only --mca, -x and
// -genv. Hydra's -envall, -envnone and -envlist, which apply to the
// program they precede, are the same for a job of one program (firstEnv).

// environ is mpirun's environment, and where warnings about it go.
type environ struct {
	vars   []string // as os.Environ
	stderr io.Writer
}

// jobEnv is what every rank gets on top of its node's environment.
// Later entries win, so --mca overrides what is forwarded, and -x and
// -genv override both.
func (e environ) jobEnv(req Environment) ([]string, error) {
	policy, err := compat.ForwardPolicy(req.Genvall || req.Envall, req.Genvnone || req.Envnone)
	if err != nil {
		return nil, err
	}
	var env []string
	switch policy {
	case compat.ForwardAll:
		env = e.forwardable()
	case compat.ForwardOMPI:
		env = e.ompi()
	}
	mca, warnings, err := compat.MCAEnv(req.GMCA, req.MCA)
	for _, w := range warnings {
		e.warn("%s", w)
	}
	if err != nil {
		return nil, err
	}
	env = append(env, mca...)
	names := append(slices.Clone(req.X), compat.ListedNames(slices.Concat(req.Genvlist, req.Envlist))...)
	exported, err := e.exports(names)
	if err != nil {
		return nil, err
	}
	env = append(env, exported...)
	set, err := compat.Settings("genv", req.Genv)
	return append(env, set...), err
}

// firstEnv puts Hydra's -env VAR value, given before the first program,
// in that program's own environment, as Hydra does. Its -envall,
// -envnone and -envlist cannot be told from their -g forms (jobEnv) but
// in a job of several programs, where they are refused.
func firstEnv(req Environment, progs []program) error {
	own, err := compat.Settings("env", req.Env)
	if err != nil {
		return err
	}
	progs[0].env = append(slices.Clone(own), progs[0].env...)
	return compat.FirstProgramOnly(req.FirstProgramFlags, len(progs))
}

// notForwarded are variables of mpirun's environment that -genvall leaves
// out: they describe mpirun's own session, shell or job, and would be
// wrong on a node.
var notForwarded = []string{
	"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "SSH_*", "DISPLAY", "TERM", "PRSH_*", "PMI_*",
	"PMIX_*", "SLURM_*", "PBS_*", "LSB_*", "MPIRUN_*",
}

// ompiJobVars are the OMPI_ variables in which Open MPI's runtime tells a
// rank about its job (those a rank of Open MPI 4.1's mpirun gets).
// Open MPI's mpirun forwards its OMPI_* and then sets these anew for each
// rank; the orteds set only some (OMPI_COMM_WORLD_*, OMPI_APPNUM,
// daemon.OpenMPIVars), so the others, in mpirun's environment when a rank
// of another job runs it, would describe that job.
var ompiJobVars = []string{
	"OMPI_COMM_WORLD_*", "OMPI_APPNUM", "OMPI_UNIVERSE_SIZE", "OMPI_NUM_APP_CTX", "OMPI_FIRST_RANKS",
	"OMPI_APP_CTX_NUM_PROCS", "OMPI_COMMAND", "OMPI_FILE_LOCATION", "OMPI_MCA_ess_base_*",
	"OMPI_MCA_initial_wdir", "OMPI_MCA_orte_hnp_uri", "OMPI_MCA_orte_local_daemon_uri",
	"OMPI_MCA_orte_parent_uri", "OMPI_MCA_orte_node_regex", "OMPI_MCA_orte_app_num",
	"OMPI_MCA_orte_num_nodes", "OMPI_MCA_orte_ess_*", "OMPI_MCA_orte_*_session_dir",
	"OMPI_MCA_orte_launch", "OMPI_MCA_orte_bound_at_launch", "OMPI_MCA_orte_precondition_transports",
	"OMPI_MCA_orte_num_restarts", "OMPI_MCA_orte_do_not_barrier",
}

// forwardable is mpirun's environment for -genvall, sorted: not its
// session's, nor another job's, nor what the orteds set for Open MPI.
func (e environ) forwardable() []string {
	return e.forwarded(func(string) bool { return true })
}

// ompi is mpirun's OMPI_* variables that -genvall would forward, which
// Open MPI's mpirun forwards by default (mpirun(1), "Exported
// Environment Variables"): OMPI_MCA_btl_tcp_if_include set where mpirun
// runs reaches an Open MPI rank under prsh too.
func (e environ) ompi() []string {
	return e.forwarded(func(name string) bool { return strings.HasPrefix(name, "OMPI_") })
}

// forwarded is the variables of forwardable whose names pick says,
// sorted; the patterns are matched against those alone (every job's
// client does this: a DVM's runs a job in a few milliseconds).
func (e environ) forwarded(pick func(name string) bool) []string {
	skip := slices.Concat(notForwarded, ompiJobVars, daemon.OpenMPIVars())
	var env []string
	for _, kv := range e.vars {
		if name, _, _ := cutVar(kv); pick(name) && !matchesAny(name, skip) {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	return env
}

func matchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// exports resolves -x VAR=value, -x VAR (its value in mpirun's
// environment) and -x 'GLOB' (every variable whose name matches, as PRRTE
// allows: -x 'OMP_*'). A name that matches nothing gets a warning: the
// user expected it to reach the ranks.
func (e environ) exports(vars []string) ([]string, error) {
	var env []string
	for _, v := range vars {
		name, value, hasValue := strings.Cut(v, "=")
		if name == "" {
			return nil, fmt.Errorf("-x %q: no variable name", v)
		}
		if _, err := path.Match(name, ""); err != nil {
			return nil, fmt.Errorf("-x %q: not a variable name or a pattern such as 'OMP_*'", v)
		}
		switch {
		case hasValue:
			env = append(env, name+"="+value)
		case strings.ContainsAny(name, "*?["):
			env = append(env, e.matching(name)...)
		default:
			if value, ok := e.lookup(name); ok {
				env = append(env, name+"="+value)
			} else {
				e.warn("-x %s: not set in mpirun's environment, so not exported", name)
			}
		}
	}
	return env, nil
}

// matching returns mpirun's variables whose names match glob, sorted.
func (e environ) matching(glob string) []string {
	var env []string
	for _, kv := range e.vars {
		if name, _, _ := cutVar(kv); matchesAny(name, []string{glob}) {
			env = append(env, kv)
		}
	}
	if len(env) == 0 {
		e.warn("-x %s: no variable of mpirun's environment matches", glob)
	}
	sort.Strings(env)
	return env
}

// lookup is name's value: the first, as os.LookupEnv.
func (e environ) lookup(name string) (string, bool) {
	for _, kv := range e.vars {
		if n, v, _ := cutVar(kv); n == name {
			return v, true
		}
	}
	return "", false
}

func (e environ) getenv(name string) string {
	v, _ := e.lookup(name)
	return v
}

// cutVar splits NAME=value.
func cutVar(kv string) (name, value string, ok bool) { return strings.Cut(kv, "=") }

// warn tells the user, on one line, about something mpirun did
// differently from what they may have meant.
func (e environ) warn(format string, args ...any) {
	fmt.Fprintf(e.stderr, "mpirun: warning: "+format+"\n", args...)
}

// absPath is p from dir, as filepath.Abs gives it from the working
// directory; p itself when dir is unknown.
func absPath(p, dir string) string {
	switch {
	case p == "":
		return ""
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	case dir == "":
		return p
	}
	return filepath.Join(dir, p)
}
