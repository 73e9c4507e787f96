// Command orted is the prsh daemon that runs on every node of a job. It is
// started by its parent in the spawn tree (mpirun or another orted) with
//
//	orted --protocol V --parent tcp://IP:PORT --id N --node NAME [--timeouts LIST] [--log-level L] [--port-range LO-HI]
//
// or, as one task of a Slurm job step that starts the orteds of many
// nodes with one argv, with --slurm-step instead of --id and --node: it
// is the node SLURMD_NODENAME, and its id is that node's in the hosts
// table on the line after the secret (daemon.StepTable).
//
// It reads the job's secret as the first line of its standard input, which
// then stays open: when it closes, the parent is gone and orted ends
// everything it started. The rest of the job comes from the parent over the
// authenticated connection.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon"
	"prsh/daemon/protocol"
	"prsh/errmgr"
	_ "prsh/internal/oneproc" // the daemon and its guard run on one P, from their start
	"prsh/internal/profile"
	"prsh/internal/tcp"
	"prsh/internal/timeouts"
	"prsh/ranks/guard"
	"prsh/spawn/agent"
	"prsh/transport"
)

// It parses its flags with the standard library rather than urfave/cli,
// as mpirun does: orted also starts once per node as the node's guard
// where no prsh-guard binary is beside it, and cli's package
// initialisation (its man-page generator) made every start several times
// slower.
func main() {
	if len(os.Args) > 1 && os.Args[1] == guard.GuardArg {
		guard.RunGuard(os.Args[2:])
	}
	checkVersion(os.Args[1:])
	flags := flag.NewFlagSet("orted", flag.ContinueOnError)
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "orted is the prsh daemon; mpirun starts it, not you. Flags:")
		flags.PrintDefaults()
	}
	flags.Int("protocol", -1, "the parent's protocol version, which must be this orted's (required with --parent)")
	parent := flags.String("parent", "", "contact address of the parent daemon (required)")
	id := flags.Int("id", -1, "this daemon's id in the job (required)")
	node := flags.String("node", "", "this node's name as the job knows it (required)")
	inStep := flags.Bool(strings.TrimPrefix(daemon.SlurmStepFlag, "--"), false, "one task of a Slurm job step: the node is SLURMD_NODENAME, its id is in the hosts table after the secret (instead of --id and --node)")
	bind := flags.String("bind", "", "IP address to listen on (default: the address the node was reached on)")
	level := flags.String("log-level", "warn", "trace, debug, info, warn, error or off")
	portRange := flags.String("port-range", "", "listen on a port of LO-HI (default: any)")
	bounds := flags.String("timeouts", "", "the job's bounds on a stall that differ from the defaults, as NAME=DURATION,… (callback, silence, …): this orted needs them before the job comes")
	if err := flags.Parse(os.Args[1:]); err == flag.ErrHelp {
		os.Exit(0)
	} else if err != nil {
		os.Exit(errmgr.StatusFailed)
	}
	if msg := identify(*parent, id, node, *inStep, flags.NArg()); msg != "" {
		fmt.Fprintln(os.Stderr, "orted: "+msg)
		os.Exit(errmgr.StatusFailed)
	}
	limits, err := timeouts.Parse(*bounds)
	if err != nil {
		fmt.Fprintf(os.Stderr, "orted: --timeouts: %v\n", err)
		os.Exit(errmgr.StatusFailed)
	}
	ports, err := tcp.ParsePorts(*portRange)
	if err != nil {
		fmt.Fprintf(os.Stderr, "orted: --port-range: %v\n", err)
		os.Exit(errmgr.StatusFailed)
	}
	if *bind == "" {
		*bind = daemon.NodeIP(*parent)
	}
	os.Exit(run(daemon.Config{ID: *id, Node: *node, ParentAddr: *parent, Bind: *bind, Ports: ports, Timeouts: limits}, *level, *inStep))
}

// identify checks the flags that say which daemon this is, and in a job
// step takes the node from Slurm; it returns what is wrong, or "".
func identify(parent string, id *int, node *string, inStep bool, args int) string {
	switch {
	case parent == "" || args > 0:
		return "--parent is required, and no argument"
	case inStep && (*id >= 0 || *node != ""):
		return "--slurm-step replaces --id and --node"
	case inStep:
		*node = os.Getenv("SLURMD_NODENAME")
		if *node == "" {
			return "--slurm-step outside a Slurm job step (SLURMD_NODENAME is not set)"
		}
	case *id < 1 || *node == "":
		return "--id (1 or more) and --node, or --slurm-step, are required"
	}
	return ""
}

// checkVersion refuses to run under a parent of another protocol version,
// before the flags are parsed: a parent of another version may pass flags
// this orted does not know, and the version is the error to report. An
// argv without --parent is not a parent's (orted run by hand): the flags'
// checks answer it. The parent's report of this orted names the node.
func checkVersion(args []string) {
	self, _ := os.Executable()
	parents, given := flagValue(args, "protocol")
	_, fromParent := flagValue(args, "parent")
	switch {
	case given && parents != strconv.Itoa(protocol.Version):
		fmt.Fprintf(os.Stderr, "orted: its parent speaks protocol version %s and this orted (%s) version %d: install the same prsh on every node\n", parents, self, protocol.Version)
	case !given && fromParent:
		fmt.Fprintf(os.Stderr, "orted: its parent gave no protocol version (it is a prsh older than this orted, %s, which speaks version %d): install the same prsh on every node\n", self, protocol.Version)
	default:
		return
	}
	os.Exit(errmgr.StatusFailed)
}

// flagValue finds flag name in args as package flag reads it (-name v,
// --name v, -name=v, --name=v).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		key, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		switch {
		case key != name:
		case hasValue:
			return value, true
		case i+1 < len(args):
			return args[i+1], true
		default:
			return "", true
		}
	}
	return "", false
}

// run reads the secret (and in a job step its id), then runs the daemon
// until the job ends.
func run(cfg daemon.Config, level string, inStep bool) int {
	// Terminal signals are mpirun's to handle; it tells the daemons.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGQUIT, syscall.SIGPIPE)
	// SIGTERM is what Slurm sends a step's tasks at the time limit or
	// scancel: the daemon reports it to mpirun and ends its ranks.
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	cfg.Signals = terms
	// The sign of life: the parent now knows this orted runs, however
	// long the call back takes on a loaded machine. In a step it names
	// the node, which tells the task ids of srun's output apart.
	alive := daemon.AliveLine
	if inStep {
		alive = agent.StepAlivePrefix + cfg.Node + "\n"
	}
	os.Stdout.WriteString(alive)
	stdin := bufio.NewReader(os.Stdin)
	secret, err := readSecret(stdin)
	if err == nil && inStep {
		cfg.ID, err = readStepID(stdin, cfg.Node)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "orted: %v\n", err)
		return errmgr.StatusFailed
	}
	cfg.Secret, cfg.Lifeline = secret, stdin
	cfg.Log = hclog.New(&hclog.LoggerOptions{
		Name: "orted." + cfg.Node, Level: hclog.LevelFromString(level), Output: os.Stderr,
	})
	profile.LimitMemory()
	stopProfile := profile.Start("orted")
	status, err := daemon.Run(context.Background(), cfg)
	stopProfile()
	if err != nil {
		fmt.Fprintf(os.Stderr, "orted: %v\n", err)
	}
	return status
}

// readStepID finds node's id in the step's hosts table, the line after
// the secret.
func readStepID(r *bufio.Reader, node string) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("reading the job step's hosts table from stdin: %w", err)
	}
	return daemon.FindInStepTable(line, node)
}

func readSecret(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading the job secret from stdin: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil || len(secret) != transport.SecretSize {
		return nil, fmt.Errorf("stdin does not start with a job secret")
	}
	return secret, nil
}
