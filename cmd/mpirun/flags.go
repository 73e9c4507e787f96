package main

import (
	"time"

	"github.com/urfave/cli/v2"
)

func flags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "np", Aliases: []string{"n"}, Usage: "number of ranks (default: one per node)"},
		&cli.StringSliceFlag{Name: "host", Aliases: []string{"H"}, Usage: "hosts as `a,b:4,c`; repeats add slots"},
		&cli.StringFlag{Name: "hostfile", Aliases: []string{"machinefile"}, EnvVars: []string{"MPIRUN_HOSTFILE"}, Usage: "hostfile with lines `host [slots=N] [max_slots=M]`"},
		&cli.IntFlag{Name: "spawn-degree", Value: 32, Usage: "δ: how many daemons each daemon spawns; 0 = spawn along the routing tree"},
		&cli.StringFlag{Name: "routed", Value: "radix", Usage: "routing topology: radix, binomial or direct"},
		&cli.IntFlag{Name: "routed-radix", Usage: "radix of the radix topology (default: the spawn degree, or 64)"},
		&cli.StringFlag{Name: "map-by", Value: "slot", Usage: "place ranks by slot or by node"},
		&cli.IntFlag{Name: "npernode", Usage: "ranks per node"},
		&cli.BoolFlag{Name: "oversubscribe", Usage: "allow more ranks than slots"},
		&cli.StringFlag{Name: "launch-agent", Usage: "external launch command, e.g. `ssh -F cfg %h` or `srun -N1 -n1 -w %h` (default: native ssh)"},
		&cli.StringFlag{Name: "ssh-config", EnvVars: []string{"MPIRUN_SSH_CONFIG"}, Usage: "OpenSSH client config file (default: ~/.ssh/config)"},
		&cli.DurationFlag{Name: "ssh-connect-timeout", Value: 10 * time.Second, Usage: "bound on an ssh connect and handshake"},
		&cli.IntFlag{Name: "ssh-max-sessions", Value: 64, Usage: "ssh sessions each daemon opens at once"},
		&cli.DurationFlag{Name: "callback-timeout", Value: 30 * time.Second, Usage: "how long a started orted may take to call back"},
		&cli.DurationFlag{Name: "kill-grace", Value: 3 * time.Second, Usage: "how long ranks have between SIGTERM and SIGKILL when the job is stopped"},
		&cli.StringFlag{Name: "on-unreachable", Value: "abort", Usage: "when a node cannot be spawned: `abort` the job, or skip it and run on the nodes that came up"},
		&cli.BoolFlag{Name: "hold-launch", Usage: "start no rank until every daemon has called back, as Open MPI does (default: the launch overlaps the spawn)"},
		&cli.StringFlag{Name: "orted", Usage: "path of orted on the nodes (default: beside mpirun)"},
		&cli.StringFlag{Name: "bind", Usage: "IP address mpirun listens on (default: the one that reaches the first node)"},
		&cli.StringFlag{Name: "wdir", Usage: "working directory of the ranks (default: mpirun's, else home)"},
		&cli.StringSliceFlag{Name: "x", Usage: "export `VAR` or VAR=value to the ranks"},
		&cli.BoolFlag{Name: "report-launch-times", Usage: "print when each launch phase completed"},
		&cli.BoolFlag{Name: "tag-output", Usage: "prefix each line with [1,RANK]<stdout>: or <stderr>:"},
		&cli.BoolFlag{Name: "prepend-rank", Aliases: []string{"l"}, Usage: "prefix each line with [RANK]"},
		&cli.BoolFlag{Name: "timestamp-output", Usage: "prefix each line with the time mpirun received it"},
		&cli.StringFlag{Name: "output-filename", Usage: "write each rank's output to `DIR`/1/rank.N/stdout and stderr"},
		&cli.BoolFlag{Name: "merge-stderr-to-stdout", Usage: "send the ranks' stderr to stdout"},
		&cli.StringFlag{Name: "stdin", Value: "0", Usage: "rank that reads mpirun's stdin, `all` or `none`"},
		&cli.StringFlag{Name: "timeout", Usage: "terminate the job after this many `SECONDS` (or a duration: 90s, 2h); exit status 124"},
		&cli.StringFlag{Name: "forward-signals", Usage: "more signals to forward to the ranks, e.g. `ALRM,WINCH` (USR1 and USR2 always are)"},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "trace, debug, info, warn, error or off"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "same as --log-level debug"},
	}
}
