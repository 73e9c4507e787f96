package compat

import (
	"errors"
	"fmt"
	"strings"
)

// EnvPolicy is what Hydra's -genvall/-genvnone and their per-program
// forms (-envall, -envnone) ask of mpirun's environment.
type EnvPolicy int

const (
	ForwardOMPI EnvPolicy = iota // Open MPI's default: its OMPI_* only
	ForwardAll                   // -genvall
	ForwardNone                  // -genvnone: only --mca, -x and -genv
)

// ForwardPolicy reads -genvall/-envall (all) and -genvnone/-envnone
// (none).
func ForwardPolicy(all, none bool) (EnvPolicy, error) {
	switch {
	case all && none:
		return 0, errors.New("-genvall and -genvnone contradict each other")
	case all:
		return ForwardAll, nil
	case none:
		return ForwardNone, nil
	}
	return ForwardOMPI, nil
}

// Settings checks Hydra's -genv or -env VAR value pairs (flag names
// which), given as VAR=value.
func Settings(flag string, pairs []string) ([]string, error) {
	for _, kv := range pairs {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return nil, fmt.Errorf("-%s %q: want -%s VAR value", flag, kv, flag)
		}
	}
	return pairs, nil
}

// ListedNames splits Hydra's -genvlist and -envlist VAR1,VAR2 values.
func ListedNames(lists []string) []string {
	var names []string
	for _, list := range lists {
		names = append(names, strings.Split(list, ",")...)
	}
	return names
}

// FirstProgramOnly checks Hydra's -envall, -envnone and -envlist (given:
// those on the command line), which apply to the program they precede:
// prsh reads them as their -g forms, which is the same in a job of one
// program and is refused in a job of several.
func FirstProgramOnly(given []string, programs int) error {
	if programs == 1 {
		return nil
	}
	for _, flag := range []string{"envall", "envnone", "envlist"} {
		for _, g := range given {
			if g == flag {
				return fmt.Errorf("-%s before the first of several programs: Hydra applies it to that program alone, which prsh cannot; give -g%s for every program", flag, flag)
			}
		}
	}
	return nil
}

// HostfileVars name a hostfile in the peers' habits, first found wins:
// prsh's own, then Hydra's.
var HostfileVars = []string{"MPIRUN_HOSTFILE", "HYDRA_HOST_FILE"}

// DefaultHostfile is Open MPI's default hostfile (OMPI_MCA_orte_default_hostfile)
// read through getenv, "" when unset or "none"; it serves, as under Open
// MPI, only outside a batch allocation.
func DefaultHostfile(getenv func(string) string) string {
	if path := getenv(DefaultHostfileVar); path != "none" {
		return path
	}
	return ""
}

// DefaultHostfileVar is Open MPI's variable for its default hostfile.
const DefaultHostfileVar = "OMPI_MCA_orte_default_hostfile"
