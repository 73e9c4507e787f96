package mpirun

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"prsh/daemon/dvm"
	"prsh/iof"
	"prsh/job/plan"
)

// copyMark in the command line's words is replaced by each copy's number.
const copyMark = "{cc}"

// maxCopies bounds --cc: a list is held whole.
const maxCopies = 1 << 20

// copies runs the command line's job once for each number of --cc, in
// the DVM at uri, as many at a time as the job's hosts have free slots
// (dvm.Copies).
func copies(c *cli.Context, uri string, hello dvm.Hello, sigs <-chan os.Signal) error {
	numbers, err := copyNumbers(c.String("cc"))
	if err != nil {
		return usageError{err}
	}
	req := dvmRequest(c, hello)
	slots, pmix, err := copySlots(c, withCopy(req, numbers[0]), hello)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(req.Args, func(a string) bool { return strings.Contains(a, copyMark) }) {
		pmix = c.String("pmix") // each copy's programs are its own: each is looked at
	}
	stdout, stderr := iof.NewSerial(os.Stdout), iof.NewSerial(os.Stderr) // each write whole lines
	req.DisplayMap, req.DisplayAllocation = false, false                 // said once, by copySlots
	run := dvm.Copies{
		Numbers: numbers, Slots: slots, Hosts: hello.Hosts, Signals: sigs, Stderr: stderr,
		Plan: func(n int, free []string) (dvm.Job, error) {
			r := withCopy(req, n)
			if free != nil {
				r.Hosts, r.Hostfile, r.Lost = free, "", nil
			}
			_, job, err := dvmJob(c, r, hello, pmix)
			return copyJob(job, n, stdout, stderr), err
		},
		Dial: func() (*dvm.Conn, error) {
			conn, _, err := dvm.Dial(uri)
			return conn, err
		},
	}
	return exitStatus(run.Run())
}

// copySlots plans the first copy over all the job's hosts (so that a
// job that cannot run says so once) and returns the slots of each DVM
// daemon id that the copies may use, and the --pmix ("on" or "off") that
// its PMIx decision amounts to: the same programs need not be read again
// for every copy (reading them is most of a small copy's planning).
func copySlots(c *cli.Context, req plan.Request, hello dvm.Hello) ([]int, string, error) {
	cfg, job, err := dvmJob(c, req, hello, c.String("pmix"))
	if err != nil {
		return nil, "", err
	}
	idOf := make(map[string]int, len(hello.Hosts))
	for id, h := range hello.Hosts {
		idOf[h] = id
	}
	slots := make([]int, len(hello.Hosts))
	for planID, h := range cfg.Job.Hosts {
		if id, ok := idOf[h]; ok && planID < len(cfg.ChildJobs.Slots) {
			slots[id] = cfg.ChildJobs.Slots[planID]
		}
	}
	pmix := "on"
	if job.Submit.App.NoPMIx {
		pmix = "off"
	}
	return slots, pmix, nil
}

// copyJob is a copy's job: no input, its output through the shared
// writers, tagged (--tag-output) and filed (--output-filename) as job N.
func copyJob(job dvm.Job, n int, stdout, stderr io.Writer) dvm.Job {
	job.Stdout, job.Stderr, job.Stdin = stdout, stderr, nil
	job.Output.JobOffset = n - 1
	return job
}

// withCopy is req with {cc} in its command lines replaced by n.
func withCopy(req plan.Request, n int) plan.Request {
	req.Args = slices.Clone(req.Args)
	for i, a := range req.Args {
		req.Args[i] = strings.ReplaceAll(a, copyMark, strconv.Itoa(n))
	}
	return req
}

// copyNumbers parses --cc: numbers and ranges, as 1-100 or 0,4,8-11, in
// the order given.
func copyNumbers(s string) ([]int, error) {
	bad := fmt.Errorf("--cc %q: want numbers and ranges, as 1-100 or 0,4,8-11", s)
	var numbers []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		switch {
		case err != nil || a < 0 || b < a:
			return nil, bad
		case b-a >= maxCopies-len(numbers):
			return nil, fmt.Errorf("--cc %s: at most %d copies", s, maxCopies)
		}
		for n := a; n <= b; n++ {
			numbers = append(numbers, n)
		}
	}
	return numbers, nil
}
