package early

import "syscall"

// HostVars are the environment variables that give mpirun hosts when no
// -H does: a hostfile in the peers' habits, a batch allocation, Open
// MPI's default hostfile. A test keeps the list whole against what the
// plan reads.
var HostVars = []string{
	"MPIRUN_HOSTFILE", "HYDRA_HOST_FILE",
	"SLURM_JOB_NODELIST", "PBS_NODEFILE", "LSB_DJOB_HOSTFILE", "LSB_MCPU_HOSTS",
	"OMPI_MCA_orte_default_hostfile",
}

// notLocal says whether an option may put the job elsewhere than on
// this host, or start none: hostfiles, a DVM, help and version; or have
// an orted run this host's ranks (a launch agent).
func notLocal(name string) bool {
	switch name {
	case "hostfile", "machinefile", "f", "default-hostfile", "launch-agent",
		"dvm", "dvm-start", "dvm-stop", "dvm-uri", "daemonize",
		"help", "h", "version":
		return true
	}
	return false
}

// hostOption says whether an option names hosts, a list each.
func hostOption(name string) bool { return name == "host" || name == "H" || name == "hosts" }

// localJob says whether mpirun's command line (args, from argv[0]) and
// environment put the job on this host alone, its ranks started by
// mpirun itself: no option of notLocal, and either host lists (-H) that
// name this host only, or none and no variable of HostVars. It reads
// options until the program, an argument after another that is not an
// option (the value of one), and again after each ":" (MPMD). It reads no
// flag table, so an option that takes no value makes it read the
// program's own arguments as mpirun's, which can only answer no more
// often: a wrong no costs the guard's start in its usual place, a wrong
// yes a guard started for nothing, which mpirun drops.
func localJob(args []string, getenv func(string) string, nodename func() string) bool {
	hosts := false
	afterOption := false
scan:
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == ":":
			afterOption = false
			continue
		case a == "--":
			break scan
		case !hasPrefix(a, "-") || a == "-":
			if afterOption {
				afterOption = false
				continue
			}
			for i < len(args) && args[i] != ":" { // the program and its arguments
				i++
			}
			continue
		}
		name, value, hasValue := cut(trimDashes(a), '=')
		switch {
		case notLocal(name):
			return false
		case hostOption(name):
			if !hasValue {
				if i+1 == len(args) {
					return false
				}
				i++
				value = args[i]
			}
			if !localHosts(value, nodename) {
				return false
			}
			hosts = true
			continue
		case name == "mca" || name == "gmca":
			if i+2 >= len(args) || contains(args[i+1], "host") || contains(args[i+1], "agent") {
				return false
			}
			i += 2
			continue
		}
		afterOption = !hasValue
	}
	if hosts {
		return true
	}
	for _, v := range HostVars {
		if getenv(v) != "" {
			return false
		}
	}
	return true
}

// localHosts says whether every host of an -H list (a,b:4) names this
// host.
func localHosts(list string, nodename func() string) bool {
	for _, h := range split(list, ',') {
		name, _, _ := cut(h, ':')
		switch name {
		case "localhost", "127.0.0.1":
			continue
		}
		self := nodename()
		short, _, _ := cut(self, '.')
		if name == "" || (name != self && name != short) {
			return false
		}
	}
	return true
}

// nodename is this host's name, as uname says it.
func nodename() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	b := make([]byte, 0, len(u.Nodename))
	for _, c := range u.Nodename {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// commandLine is this process's argv, read from /proc: at init the os
// package, which holds os.Args, may not be initialized yet.
func commandLine() []string {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var all []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			break
		}
		all = append(all, buf[:n]...)
	}
	return split(trimNul(string(all)), 0)
}
