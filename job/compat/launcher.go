package compat

import (
	"fmt"
	"strings"
)

// Launchers are the ways prsh starts its daemons (mpirun --launcher):
// auto (srun inside a Slurm allocation whose hosts the job runs on,
// else ssh), ssh or srun.
const (
	LauncherAuto = "auto"
	LauncherSSH  = "ssh"
	LauncherSrun = "srun"
)

// launcherSpellings map each peer's names of a launcher to prsh's:
// Hydra's -launcher and -bootstrap (ssh, rsh, slurm), Open MPI's --mca
// plm (rsh, slurm). Hydra's rsh and Open MPI's plm rsh both mean the
// ssh agent.
var launcherSpellings = map[string]string{
	"auto": LauncherAuto, "ssh": LauncherSSH, "rsh": LauncherSSH,
	"srun": LauncherSrun, "slurm": LauncherSrun,
}

// LauncherVars are the peers' variables that name a launcher, first found
// wins: Open MPI's plm, Hydra's launcher and its older bootstrap.
var LauncherVars = []string{"OMPI_MCA_plm", "HYDRA_LAUNCHER", "HYDRA_BOOTSTRAP"}

// Launcher reads the launcher the user asked for: the --launcher flag
// (also Hydra's -launcher and -bootstrap), else Open MPI's --mca plm
// among mca (KEY=VALUE pairs, the last given wins), else the first of
// LauncherVars set through getenv, else auto.
func Launcher(flag string, mca []string, getenv func(string) string) (string, error) {
	if flag != "" {
		return launcherNamed("--launcher", flag)
	}
	plm := ""
	for _, kv := range mca {
		if key, value, _ := strings.Cut(kv, "="); key == "plm" {
			plm = value
		}
	}
	if plm != "" {
		return launcherNamed("--mca plm", plm)
	}
	for _, name := range LauncherVars {
		if value := getenv(name); value != "" {
			return launcherNamed(name, value)
		}
	}
	return LauncherAuto, nil
}

func launcherNamed(from, value string) (string, error) {
	if l, ok := launcherSpellings[strings.ToLower(value)]; ok {
		return l, nil
	}
	return "", fmt.Errorf("%s %q: want auto, ssh (or rsh) or srun (or slurm)", from, value)
}
