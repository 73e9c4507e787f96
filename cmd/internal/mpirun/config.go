package mpirun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"prsh/daemon"
	"prsh/job/compat"
	"prsh/job/plan"
	"prsh/transport"
)

// configure turns the command line into mpirun's daemon configuration:
// flags → plan.Request → plan.Make, plus what only mpirun's process has.
func configure(c *cli.Context) (daemon.Config, error) {
	waiting := waitingLine(c)
	stderr := stderrOf(waiting)
	log := logger(c, stderr)
	makePlan := plan.Make
	if c.Bool("dvm-start") {
		makePlan = plan.MakeDVM
	}
	cfg, err := makePlan(request(c), here(log))
	var wrong plan.UsageError
	if errors.As(err, &wrong) {
		return daemon.Config{}, usageError{wrong.Err}
	}
	if err != nil {
		return daemon.Config{}, err
	}
	if cfg.Secret, err = transport.NewSecret(); err != nil {
		return daemon.Config{}, err
	}
	cfg.Stdout, cfg.Stderr, cfg.Waiting = os.Stdout, stderr, waiting
	cfg.ReportTimes = c.Bool("report-launch-times")
	cfg.Output = outputOptions(c)
	cfg.Stdin = stdinSource(cfg.App.StdinRank)
	if c.Bool("dvm-start") {
		cfg.DVM = &daemon.DVMConfig{URIFile: absPath(c.String("dvm-uri")),
			HostArgs: c.StringSlice("host"), Hostfile: absPath(c.String("hostfile"))}
	}
	return cfg, nil
}

// request is the command line as a plan.Request.
func request(c *cli.Context) plan.Request {
	return plan.Request{
		Hosts: c.StringSlice("host"), Hostfile: c.String("hostfile"),
		Args: c.Args().Slice(), NP: c.Int("np"), NPSet: c.IsSet("np"), Appfile: c.String("app"),
		Placement: plan.Placement{
			MapBy: c.String("map-by"), MapBySet: c.IsSet("map-by"), NPerNode: c.Int("npernode"),
			CPUsPerRank: c.Int("cpus-per-rank"), CPUsPerRankSet: c.IsSet("cpus-per-rank"),
			BindTo: c.String("bind-to"), BindToSet: c.IsSet("bind-to"),
			Oversubscribe: c.Bool("oversubscribe"), ReportBindings: c.Bool("report-bindings"),
			Older: switchesOn(c, compat.OlderMapBy, compat.OlderBindTo),
		},
		Environment: plan.Environment{
			X: rawValues(c, "x"), Genv: rawValues(c, "genv"), Genvlist: rawValues(c, "genvlist"),
			Env: rawValues(c, "env"), Envlist: rawValues(c, "envlist"),
			MCA: rawValues(c, "mca"), GMCA: rawValues(c, "gmca"),
			Genvall: c.Bool("genvall"), Genvnone: c.Bool("genvnone"),
			Envall: c.Bool("envall"), Envnone: c.Bool("envnone"),
			FirstProgramFlags: given(c, "envall", "envnone", "envlist"),
		},
		SpawnDegree: c.String("spawn-degree"), SpawnDegreeSet: c.IsSet("spawn-degree"), SpawnHopHint: c.Duration("spawn-hop-hint"),
		SpawnCostHint: c.Duration("spawn-cost-hint"),
		Routed:        c.String("routed"), RoutedRadix: c.Int("routed-radix"),
		LaunchAgent: c.String("launch-agent"), Launcher: c.String("launcher"), SSHConfig: c.String("ssh-config"),
		SSHSystemConfig: c.String("ssh-system-config"), SSHConnectTimeout: c.Duration("ssh-connect-timeout"),
		SSHMaxSessions: c.Int("ssh-max-sessions"), CallbackTimeout: c.Duration("callback-timeout"),
		KillGrace: c.Duration("kill-grace"), Timeouts: c.String("timeouts"), OnUnreachable: c.String("on-unreachable"),
		EveryHost:  c.Bool("every-host"),
		HoldLaunch: c.Bool("hold-launch"), PMIx: c.String("pmix"), PortRange: c.String("port-range"),
		Orted: c.String("orted"), ListenIP: c.String("listen-ip"), LogLevel: logLevel(c),
		PreloadBinary: c.Bool("preload-binary"), PreloadLibs: c.Bool("preload-libs"),
		Wdir: c.String("wdir"), Stdin: c.String("stdin"), MergeStderr: c.Bool("merge-stderr-to-stdout"),
		Timeout:    c.String("timeout"),
		DisplayMap: c.Bool("display-map"), DisplayAllocation: c.Bool("display-allocation"),
	}
}

// switchesOn are which of the boolean flags named in the tables' keys
// are on.
func switchesOn(c *cli.Context, tables ...map[string]string) map[string]bool {
	on := map[string]bool{}
	for _, table := range tables {
		for name := range table {
			on[name] = c.Bool(name)
		}
	}
	return on
}

// given are which of names are on the command line.
func given(c *cli.Context, names ...string) []string {
	var set []string
	for _, name := range names {
		if c.IsSet(name) {
			set = append(set, name)
		}
	}
	return set
}

// here is what the plan needs of this process and host.
func here(log hclog.Logger) plan.Here {
	h := plan.Here{
		Environ: os.Environ(), CPUs: runtime.NumCPU(), Log: log, Stderr: os.Stderr,
		JobID: fmt.Sprintf("prsh_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000_000),
	}
	h.Hostname, _ = os.Hostname()
	h.Dir, _ = os.Getwd()
	h.Executable, h.ExecutableErr = os.Executable()
	if resolved, err := filepath.EvalSymlinks(h.Executable); err == nil {
		h.Executable = resolved
	}
	return h
}

func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func logLevel(c *cli.Context) string {
	if c.Bool("verbose") {
		return "debug"
	}
	return c.String("log-level")
}

// logger is mpirun's log. At the default level it shows only warnings and
// errors, and those read as messages to the user, like mpirun's others:
// "mpirun: warning: identity file not found: file=…".
func logger(c *cli.Context, stderr io.Writer) hclog.Logger {
	level := hclog.LevelFromString(logLevel(c))
	if level >= hclog.Warn {
		return hclog.New(&hclog.LoggerOptions{Name: "mpirun", Level: level, Output: userLines{stderr}, DisableTime: true})
	}
	return hclog.New(&hclog.LoggerOptions{Name: "mpirun", Level: level, Output: stderr})
}

// userLines rewrites hclog's "[WARN]  mpirun.ssh: text" entries (one per
// Write) as "mpirun: warning: text".
type userLines struct{ w io.Writer }

func (u userLines) Write(p []byte) (int, error) {
	line := string(p)
	for prefix, kind := range map[string]string{"[WARN]": "warning", "[ERROR]": "error"} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if _, text, ok := strings.Cut(rest, ": "); ok {
				line = "mpirun: " + kind + ": " + text
			}
		}
	}
	if _, err := io.WriteString(u.w, line); err != nil {
		return 0, err
	}
	return len(p), nil
}
