package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// launcher is one way of launching /bin/true on the first n nodes.
type launcher struct {
	name        string
	unavailable string // why it cannot run here; "" if it can
	argv        func(h hostsFiles, n, degree int) []string
}

// oursLaunchers are our mpirun, and one more per variant (NAME=ARGS).
func oursLaunchers(mpirun, agent string, native bool, extra, variants []string) ([]launcher, error) {
	ours := []launcher{oursLauncher("prsh", mpirun, agent, native, extra)}
	for _, v := range variants {
		name, args, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--variant %q: want NAME=ARGS, e.g. 'before=--orted /tmp/old/orted'", v)
		}
		ours = append(ours, oursLauncher("prsh:"+name, mpirun, agent, native, append(slices.Clone(extra), strings.Fields(args)...)))
	}
	return ours, nil
}

// oursLauncher is our mpirun through agent, or natively over ssh.
func oursLauncher(name, mpirun, agent string, native bool, extra []string) launcher {
	return launcher{name: name, argv: func(h hostsFiles, n, degree int) []string {
		argv := []string{mpirun, "--hostfile", h.slots, "--spawn-degree", strconv.Itoa(degree), "--report-launch-times"}
		if !native {
			argv = append(argv, "--launch-agent", agent+" %h")
		}
		return append(append(argv, extra...), "/bin/true")
	}}
}

// peerLaunchers are the launchers users would pick instead, each started
// through the same agent, each as flat as it goes (pdsh and clush with a
// fanout of every node).
func peerLaunchers(agent string, uts bool) []launcher {
	return []launcher{
		{name: "hydra", unavailable: missing("mpiexec.hydra", "mpich"), argv: func(h hostsFiles, n, _ int) []string {
			return []string{"mpiexec.hydra", "-launcher", "rsh", "-launcher-exec", agent, "-f", h.counted,
				"-n", strconv.Itoa(n), "/bin/true"}
		}},
		openMPILauncher(agent, uts),
		{name: "pdsh", unavailable: missing("pdsh", "pdsh"), argv: func(h hostsFiles, n, _ int) []string {
			return []string{"pdsh", "-R", "exec", "-f", strconv.Itoa(n), "-w", strings.Join(h.names, ","),
				agent, "%h", "/bin/true"}
		}},
		{name: "clush", unavailable: missing("clush", "clustershell"), argv: func(h hostsFiles, n, _ int) []string {
			return []string{"clush", "-R", "exec", "-f", strconv.Itoa(n), "-w", strings.Join(h.names, ","),
				agent, "%h", "/bin/true"}
		}},
	}
}

// openMPILauncher is ORTE's mpirun, whose orteds spawn each other along
// ORTE's own tree through the agent. ORTE starts "orted" by name, which
// the nodes' PATH would find as ours: it is named by its installed path.
func openMPILauncher(agent string, uts bool) launcher {
	l := launcher{name: "ompi", unavailable: missing("mpirun.openmpi", "openmpi-bin")}
	if l.unavailable != "" {
		return l
	}
	mpirun, _ := exec.LookPath("mpirun.openmpi")
	installed, err := filepath.EvalSymlinks(mpirun)
	orted := filepath.Join(filepath.Dir(installed), "orted")
	switch {
	case err != nil:
		l.unavailable = err.Error()
	case !isExecutable(orted):
		l.unavailable = "Open MPI's orted is not beside " + installed
	case !uts:
		l.unavailable = "needs --uts: Open MPI names its shared-memory segments after the hostname"
	}
	l.argv = func(h hostsFiles, n, _ int) []string {
		return []string{mpirun, "--allow-run-as-root", "--mca", "plm_rsh_agent", agent,
			"--mca", "orte_launch_agent", orted, "--hostfile", h.slots, "-np", strconv.Itoa(n), "/bin/true"}
	}
	return l
}

// missing says why a command is not there, or "".
func missing(cmd, pkg string) string {
	if _, err := exec.LookPath(cmd); err != nil {
		return cmd + " is not installed (apt-get install " + pkg + ")"
	}
	return ""
}

func isExecutable(path string) bool {
	p, err := exec.LookPath(path)
	return err == nil && p != ""
}
