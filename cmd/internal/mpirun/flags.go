package mpirun

import (
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/dvm"
)

func flags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "np", Aliases: []string{"n", "c"}, Usage: "number of ranks (default: one per slot)"},
		&cli.StringSliceFlag{Name: "host", Aliases: []string{"H", "hosts"}, Usage: "hosts as `a,b:4,node[01-16]`; repeats add slots"},
		&cli.StringFlag{Name: "hostfile", Aliases: []string{"machinefile", "f"}, Usage: "hostfile with lines `host [slots=N] [max_slots=M]` (default: $MPIRUN_HOSTFILE or $HYDRA_HOST_FILE, else the batch allocation, else $OMPI_MCA_orte_default_hostfile)"},
		&cli.StringFlag{Name: "spawn-degree", Value: "32", Usage: "δ: how many daemons each daemon spawns; 0 = spawn along the routing tree; auto = the fastest tree for the hints below"},
		&cli.DurationFlag{Name: "spawn-hop-hint", Value: 300 * time.Millisecond, Usage: "for --spawn-degree auto: a session's time from its start until its orted can spawn"},
		&cli.DurationFlag{Name: "spawn-cost-hint", Value: 10 * time.Millisecond, Usage: "for --spawn-degree auto: a spawner's time per session before it can open the next"},
		&cli.StringFlag{Name: "routed", Value: "radix", Usage: "routing topology: radix, binomial or direct"},
		&cli.IntFlag{Name: "routed-radix", Usage: "radix of the radix topology (default: the spawn degree, or 64)"},
		&cli.StringFlag{Name: "map-by", Value: "slot", Usage: "place ranks by `slot`, node, socket, numa or l3cache (by slot, bound ranks round robin over each node's units) or ppr:N:node (N per node); :PE=N gives each rank N slots and binds it to N cores"},
		&cli.IntFlag{Name: "npernode", Aliases: []string{"N", "ppn"}, Usage: "ranks per node"},
		&cli.IntFlag{Name: "cpus-per-rank", Aliases: []string{"cpus-per-proc"}, Usage: "cores each rank takes and is bound to, as --map-by slot:PE=`N`"},
		&cli.StringFlag{Name: "app", Usage: "appfile: one program per line, `FILE`"},
		&cli.BoolFlag{Name: "display-map", Aliases: []string{"display-devel-map", "print-rank-map"}, Usage: "print where each rank runs before starting (on stderr)"},
		&cli.BoolFlag{Name: "display-allocation", Usage: "print the hosts and slots found, and where from (on stderr)"},
		&cli.StringFlag{Name: "bind-to", Usage: "bind each rank to a hwthread, `core`, l3cache, numa node, socket, the board or none (default), from its node's own CPUs; UNIT:overload-allowed lets ranks share"},
		&cli.BoolFlag{Name: "report-bindings", Usage: "print each rank's binding (on stderr)"},
		&cli.BoolFlag{Name: "allow-run-as-root", Usage: "accepted for Open MPI's command lines; prsh runs as root without it"},
		// Older or other spellings of Open MPI's, which its users' scripts keep.
		&cli.BoolFlag{Name: "bynode", Usage: "Open MPI's older --map-by node"},
		&cli.BoolFlag{Name: "byslot", Usage: "Open MPI's older --map-by slot"},
		&cli.BoolFlag{Name: "bind-to-core", Usage: "Open MPI's older --bind-to core"},
		&cli.BoolFlag{Name: "bind-to-socket", Usage: "Open MPI's older --bind-to socket"},
		&cli.BoolFlag{Name: "nooversubscribe", Usage: "Open MPI's: no more ranks than slots (the default)"},
		&cli.BoolFlag{Name: "use-hwthread-cpus", Usage: "Open MPI's: a slot per hardware thread where no slots are given (prsh's default)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "Open MPI's: no effect (prsh prints only errors and warnings)"},
		&cli.BoolFlag{Name: "noprefix", Usage: "Open MPI's: no effect (prsh has no --prefix)"},
		&cli.GenericFlag{Name: "mca", Value: &rawList{}, Usage: "Open MPI's MCA parameter `KEY VALUE`, passed to the ranks as OMPI_MCA_KEY=VALUE"},
		// Not an alias: the flag library sets an alias's value again
		// from its String, which would join the pairs into one.
		&cli.GenericFlag{Name: "gmca", Value: &rawList{}, Usage: "Open MPI's global MCA parameter `KEY VALUE`: as --mca"},
		&cli.BoolFlag{Name: "oversubscribe", Usage: "allow more ranks than slots"},
		&cli.StringFlag{Name: "launch-agent", Usage: "external launch command, e.g. `ssh -F cfg %h` or `srun --overlap -N1 -n1 -w %h` (default: native ssh, or srun inside a Slurm allocation)"},
		&cli.StringFlag{Name: "launcher", Aliases: []string{"bootstrap"}, Usage: "how the daemons start: `auto` (srun inside a Slurm allocation whose hosts the job runs on, else ssh), ssh or srun; also Hydra's rsh and slurm (default: auto, or Open MPI's --mca plm rsh|slurm)"},
		&cli.StringFlag{Name: "ssh-config", EnvVars: []string{"MPIRUN_SSH_CONFIG"}, Usage: "OpenSSH client config file (default: ~/.ssh/config)"},
		&cli.StringFlag{Name: "ssh-system-config", EnvVars: []string{"MPIRUN_SSH_SYSTEM_CONFIG"}, Usage: "system-wide OpenSSH client config, read after the user's, or `none` (default: /etc/ssh/ssh_config; none with --ssh-config, as ssh -F)"},
		&cli.DurationFlag{Name: "ssh-connect-timeout", Value: 10 * time.Second, Usage: "bound on an ssh connect, and on the server's silence in its handshake"},
		&cli.IntFlag{Name: "ssh-max-sessions", Value: 64, Usage: "ssh sessions each daemon opens at once"},
		&cli.DurationFlag{Name: "callback-timeout", Value: 30 * time.Second, Usage: "how long a started orted may take to call back"},
		&cli.DurationFlag{Name: "kill-grace", Value: 3 * time.Second, Usage: "how long ranks have between SIGTERM and SIGKILL when the job is stopped"},
		&cli.StringFlag{Name: "timeouts", Usage: "other bounds on a stall, as `NAME=DURATION,…`: silence (20s: a daemon heard from for none of it is lost), guard-stopped (30s), drain (20s), hello, handshake, keep-alive, stop-wait, pmi-drain, slot-wait (10s)"},
		&cli.StringFlag{Name: "on-unreachable", Value: "abort", Usage: "when a node cannot be spawned: `abort` the job, or skip it and run on the nodes that came up"},
		&cli.BoolFlag{Name: "every-host", Usage: "start an orted on every host of the list, those that get no rank too (default: only where ranks go)"},
		&cli.BoolFlag{Name: "novm", Usage: "Open MPI's --novm: orteds only where ranks go, the default"},
		&cli.BoolFlag{Name: "hold-launch", Usage: "start no rank until every daemon has called back, as Open MPI does (default: the launch overlaps the spawn)"},
		&cli.StringFlag{Name: "pmix", Value: "auto", Usage: "boot each node's PMIx server (Open MPI programs): `auto` = unless every program is found to link no MPI library, on or off"},
		&cli.StringFlag{Name: "port-range", EnvVars: []string{"MPIEXEC_PORT_RANGE"}, Usage: "listen, in mpirun and every orted, on a port of `LO-HI` (or Hydra's LO:HI), for firewalls that open only those"},
		&cli.StringFlag{Name: "orted", Usage: "path of the daemon on the nodes, for every job (default: orted beside mpirun, orted-pmix beside it for jobs that may need PMIx)"},
		&cli.StringFlag{Name: "listen-ip", Usage: "IP address mpirun listens on (default: the one that reaches the first node)"},
		&cli.BoolFlag{Name: "preload-binary", Aliases: []string{"s"}, Usage: "copy the program down the spawn tree to each node's TMPDIR and run it from there"},
		&cli.BoolFlag{Name: "preload-libs", Usage: "with the program, the shared libraries it loads on this node (glibc's aside)"},
		&cli.StringFlag{Name: "wdir", Usage: "working directory of the ranks (default: mpirun's, else home)"},
		&cli.GenericFlag{Name: "x", Value: &rawList{}, Usage: "export `VAR`, VAR=value or 'GLOB*' to the ranks"},
		&cli.GenericFlag{Name: "genv", Value: &rawList{}, Usage: "Hydra's `VAR value`: set VAR for the ranks"},
		&cli.GenericFlag{Name: "genvlist", Value: &rawList{}, Usage: "Hydra's `VAR1,VAR2`: export these"},
		&cli.GenericFlag{Name: "env", Value: &rawList{}, Usage: "Hydra's `VAR value` before the first program: set VAR for its ranks"},
		&cli.GenericFlag{Name: "envlist", Value: &rawList{}, Usage: "Hydra's `VAR1,VAR2` before the first program: as -genvlist"},
		&cli.BoolFlag{Name: "envall", Usage: "Hydra's, before the first program: as -genvall"},
		&cli.BoolFlag{Name: "envnone", Usage: "Hydra's, before the first program: as -genvnone"},
		&cli.BoolFlag{Name: "genvall", Usage: "export all of mpirun's environment (but its session's: SSH_*, PWD, …)"},
		&cli.BoolFlag{Name: "genvnone", Usage: "export none of mpirun's environment but -x and -genv, not even its OMPI_* (exported by default)"},
		&cli.BoolFlag{Name: "report-launch-times", Usage: "print when each launch phase completed"},
		&cli.BoolFlag{Name: "tag-output", Usage: "prefix each line with [1,RANK]<stdout>: or <stderr>:"},
		&cli.BoolFlag{Name: "prepend-rank", Aliases: []string{"l"}, Usage: "prefix each line with [RANK]"},
		&cli.BoolFlag{Name: "timestamp-output", Usage: "prefix each line with the time mpirun received it"},
		&cli.StringFlag{Name: "output-filename", Usage: "write each rank's output to `DIR`/1/rank.N/stdout and stderr"},
		&cli.BoolFlag{Name: "merge-stderr-to-stdout", Usage: "send the ranks' stderr to stdout"},
		&cli.StringFlag{Name: "stdin", Value: "0", Usage: "rank that reads mpirun's stdin, `all` or `none`"},
		&cli.StringFlag{Name: "timeout", EnvVars: []string{"MPIEXEC_TIMEOUT"}, Usage: "terminate the job after this many `SECONDS` (or a duration: 90s, 2h); exit status 124"},
		&cli.StringFlag{Name: "forward-signals", Usage: "more signals to forward to the ranks, e.g. `ALRM,WINCH` (USR1 and USR2 always are)"},
		&cli.BoolFlag{Name: "dvm-start", Usage: "start a DVM: spawn the daemons and keep them up for jobs submitted with --dvm; print its URI"},
		&cli.StringFlag{Name: "dvm-uri", Usage: "with --dvm-start, write the DVM's URI into `FILE`"},
		&cli.BoolFlag{Name: "daemonize", Usage: "with --dvm-start, run the DVM in the background: exit once it is up, having printed its URI; its lines go to the file beside its socket's directory, .../prsh-dvm-XXXX.log"},
		&cli.StringFlag{Name: "dvm", Usage: "run the job in the DVM at `URI` (or the file holding it; default: $PRSH_DVM)"},
		&cli.StringFlag{Name: "cc", Usage: "with --dvm, run the job once for each number of `LIST` (1-1000, 0,4,8-11), {cc} in its command line becoming the number, as many at a time as its hosts' slots hold"},
		&cli.StringFlag{Name: "dvm-stop", Usage: "stop the DVM at `URI` (or the file holding it; default: $PRSH_DVM)"},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "trace, debug, info, warn, error or off"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "same as --log-level debug"},
	}
}

// rawList collects a repeated flag's values exactly as given: urfave/cli's
// slice flags trim spaces, and -x 'PAD= x ' must reach the ranks whole.
type rawList []string

func (l *rawList) Set(v string) error { *l = append(*l, v); return nil }
func (l *rawList) String() string     { return strings.Join(*l, " ") }

// rawValues returns the values of a rawList flag.
func rawValues(c *cli.Context, name string) []string {
	if l, ok := c.Generic(name).(*rawList); ok {
		return *l
	}
	return nil
}

// pairFlags take two values, as in Hydra's -genv VAR value and Open MPI's
// --mca KEY VALUE.
var pairFlags = map[string]bool{"genv": true, "env": true, "mca": true, "gmca": true}

// namesDVM says whether the words after flag name its DVM. --dvm-stop
// takes no command: a word after it that is no option is its DVM. After
// --dvm comes the job's command, so a word is the DVM's only if it is a
// URI or a file that holds one. Other flags always take their value.
func namesDVM(flag string, rest []string) bool {
	switch {
	case flag != "dvm" && flag != "dvm-stop":
		return true
	case len(rest) == 0 || strings.HasPrefix(rest[0], "-"):
		return false
	case flag == "dvm-stop":
		return true
	}
	return dvm.NamesDVM(rest[0])
}

// joinPairs rewrites "-genv VAR value" among mpirun's own options (before
// the command) as "-genv=VAR=value", which the flag library reads as one
// value, and a --dvm or --dvm-stop that names no DVM as --dvm= (PRSH_DVM
// then names it). It needs to know which flags take a value to find the
// command.
func joinPairs(args []string, flags []cli.Flag) []string {
	if len(args) == 0 {
		return args
	}
	switches := map[string]bool{"help": true, "h": true, "version": true}
	for _, f := range flags {
		if isSwitch(f) {
			for _, name := range f.Names() {
				switches[name] = true
			}
		}
	}
	out := append([]string(nil), args...)
	for i := 1; i < len(out); i++ {
		arg := out[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		switch {
		case arg == "--" || !strings.HasPrefix(arg, "-") || arg == "-":
			return out
		case hasValue || switches[name]:
		case !namesDVM(name, out[i+1:]):
			out[i] = arg + "="
		case pairFlags[name] && i+2 < len(out):
			joined := arg + "=" + out[i+1] + "=" + out[i+2]
			out = append(out[:i], append([]string{joined}, out[i+3:]...)...)
		default:
			i++ // the flag's value
		}
	}
	return out
}
