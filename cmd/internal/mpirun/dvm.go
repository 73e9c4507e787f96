package mpirun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"prsh/daemon"
	"prsh/daemon/dvm"
	"prsh/errmgr"
	"prsh/job/plan"
)

// EnvDVM names the variable that holds the DVM's URI, or the file that
// holds it, for a --dvm or --dvm-stop (prun, pterm) that names none.
const EnvDVM = "PRSH_DVM"

// dvmClient is mpirun as a DVM's client: --dvm-stop, or --dvm to submit
// the job of the rest of the command line.
func dvmClient(c *cli.Context) error {
	flag := "dvm"
	if c.IsSet("dvm-stop") {
		flag = "dvm-stop"
	}
	where, arg, err := dvmNamed(c, flag)
	if err != nil {
		return err
	}
	uri, err := dvm.Resolve(arg)
	if err != nil {
		return dvmFailed(where, err)
	}
	if flag == "dvm-stop" {
		note, err := dvm.Stop(uri)
		if note != "" {
			fmt.Fprintln(os.Stderr, "mpirun: "+note)
		}
		return dvmFailed(where, err)
	}
	conn, hello, err := dvm.Dial(uri)
	if err != nil {
		return dvmFailed(where, err)
	}
	for _, w := range hello.Warnings {
		fmt.Fprintln(os.Stderr, w)
	}
	forwarded, err := forwardedSignals(c.String("forward-signals"))
	if err != nil {
		conn.Close()
		return usageError{err}
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, append(forwarded, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)...)
	if c.IsSet("cc") {
		conn.Close()
		return copies(c, uri, hello, sigs)
	}
	_, job, err := dvmJob(c, dvmRequest(c, hello), hello, c.String("pmix"))
	if err != nil {
		conn.Close()
		return err
	}
	job.Signals = sigs
	return exitStatus(job.Run(conn))
}

// dvmRequest is the job's request, over the DVM's hosts (those it did
// not lose) unless the command line names some.
func dvmRequest(c *cli.Context, hello dvm.Hello) plan.Request {
	req := request(c)
	req.Submit = true
	if len(req.Hosts) == 0 && req.Hostfile == "" {
		req.Hosts, req.Hostfile, req.Lost = hello.HostArgs, hello.Hostfile, hello.Lost
	}
	// The DVM's daemons have their PMIx servers or not since its start;
	// the job's --pmix says whether it gets a namespace in them.
	req.PMIx = "off"
	return req
}

// dvmJob plans the job as a plain mpirun would and places it on the
// DVM's daemons; pmix is its --pmix, which says whether it gets a PMIx
// namespace.
func dvmJob(c *cli.Context, req plan.Request, hello dvm.Hello, pmix string) (daemon.Config, dvm.Job, error) {
	log := logger(c, os.Stderr)
	cfg, err := plan.Make(req, here(log))
	var wrong plan.UsageError
	if errors.As(err, &wrong) {
		return cfg, dvm.Job{}, usageError{lostSlots(req, wrong.Err)}
	}
	if err != nil {
		return cfg, dvm.Job{}, err
	}
	app, err := dvm.Place(cfg.App, cfg.Job.Hosts, hello.Hosts, hello.Lost)
	if err != nil {
		return cfg, dvm.Job{}, usageError{fmt.Errorf("--dvm: %w", err)}
	}
	if app.NoPMIx, err = plan.NoPMIx(pmix, app, log); err != nil {
		return cfg, dvm.Job{}, usageError{err}
	}
	return cfg, dvm.Job{
		Submit: dvm.Submit{App: app, TimeoutMS: cfg.Timeout.Milliseconds()},
		Stdout: os.Stdout, Stderr: os.Stderr, Output: outputOptions(c), Stdin: stdinSource(app.StdinRank),
	}, nil
}

// lostSlots words a job that does not fit the nodes a DVM has left, but
// would with those it lost: the lost nodes are named.
func lostSlots(req plan.Request, err error) error {
	if len(req.Lost) == 0 {
		return err
	}
	lost := req.Lost
	req.Lost, req.DisplayMap, req.DisplayAllocation = nil, false, false
	h := here(hclog.NewNullLogger())
	h.Stderr = io.Discard
	if _, again := plan.Make(req, h); again != nil {
		return err
	}
	return fmt.Errorf("--dvm: the job needs the slots of %s, which the DVM lost: %w", strings.Join(lost, ", "), err)
}

// dvmFlagsTogether checks that one DVM command is asked for, and
// --dvm-uri only with --dvm-start.
func dvmFlagsTogether(c *cli.Context) error {
	var given []string
	for _, name := range []string{"dvm-start", "dvm", "dvm-stop"} {
		if c.IsSet(name) {
			given = append(given, "--"+name)
		}
	}
	switch {
	case len(given) > 1:
		return fmt.Errorf("%s and %s: give one", given[0], given[1])
	case c.IsSet("dvm-uri") && !c.Bool("dvm-start"):
		return errors.New("--dvm-uri goes with --dvm-start")
	case c.IsSet("cc") && !c.IsSet("dvm"):
		return errors.New("--cc goes with --dvm (prun): copies of a job run in a DVM")
	case c.IsSet("dvm-stop") && c.NArg() > 0:
		return fmt.Errorf("--dvm-stop takes no command (%s)", c.Args().First())
	}
	return nil
}

// dvmNamed is the DVM that flag names, else PRSH_DVM's, and where it was
// named (for the error lines).
func dvmNamed(c *cli.Context, flag string) (where, arg string, err error) {
	if arg = c.String(flag); arg != "" {
		return "--" + flag, arg, nil
	}
	if arg = os.Getenv(EnvDVM); arg != "" {
		return EnvDVM, arg, nil
	}
	return "", "", usageError{fmt.Errorf("--%s names no DVM and %s is not set: give --%s URI|FILE, or export %s=URI as mpirun --dvm-start (prte) printed it",
		flag, EnvDVM, flag, EnvDVM)}
}

// dvmFailed words a failure to reach the DVM in mpirun's one line; where
// is the flag or the variable that named it.
func dvmFailed(where string, err error) error {
	if err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "mpirun: %s %v\n", where, err)
	return exitStatus(errmgr.StatusFailed)
}
