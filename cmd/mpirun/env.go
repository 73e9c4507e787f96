package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// The ranks' environment is their node's (what ssh gives orted) plus what
// the user forwards: nothing of mpirun's own by default, as Open MPI does,
// else -x, Hydra's -genv, -genvlist and -genvall.

// jobEnv is what every rank gets on top of its node's environment.
// Later entries win, so -x and -genv override -genvall.
func jobEnv(c *cli.Context) ([]string, error) {
	if c.Bool("genvall") && c.Bool("genvnone") {
		return nil, errors.New("-genvall and -genvnone contradict each other")
	}
	var env []string
	if c.Bool("genvall") {
		env = forwardableEnv()
	}
	names := rawValues(c, "x")
	for _, list := range rawValues(c, "genvlist") {
		names = append(names, strings.Split(list, ",")...)
	}
	exported, err := exports(names)
	if err != nil {
		return nil, err
	}
	env = append(env, exported...)
	for _, kv := range rawValues(c, "genv") {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return nil, fmt.Errorf("-genv %q: want -genv VAR value", kv)
		}
		env = append(env, kv)
	}
	return env, nil
}

// notForwarded are variables of mpirun's environment that -genvall leaves
// out: they describe mpirun's own session, shell or job, and would be
// wrong on a node.
var notForwarded = []string{
	"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "SSH_*", "DISPLAY", "TERM", "PRSH_*", "OMPI_COMM_WORLD_*",
	"PMI_*", "PMIX_*", "SLURM_*", "PBS_*", "LSB_*", "MPIRUN_*",
}

// forwardableEnv is mpirun's environment for -genvall, sorted.
func forwardableEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !matchesAny(name, notForwarded) {
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
func exports(vars []string) ([]string, error) {
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
			env = append(env, matching(name)...)
		default:
			if value, ok := os.LookupEnv(name); ok {
				env = append(env, name+"="+value)
			} else {
				warn("-x %s: not set in mpirun's environment, so not exported", name)
			}
		}
	}
	return env, nil
}

// matching returns mpirun's variables whose names match glob, sorted.
func matching(glob string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); matchesAny(name, []string{glob}) {
			env = append(env, kv)
		}
	}
	if len(env) == 0 {
		warn("-x %s: no variable of mpirun's environment matches", glob)
	}
	sort.Strings(env)
	return env
}

// warn tells the user, on one line of stderr, about something mpirun did
// differently from what they may have meant.
func warn(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mpirun: warning: "+format+"\n", args...)
}
