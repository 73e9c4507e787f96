package agent

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// What srun --label writes for a job step of many tasks, read line by
// line: the tasks' own lines ("3: text", the task id padded to the
// widest), and srun's report of each task that ends other than with
// status 0 ("srun: error: node3: task 2: Exited with exit code 2"), which
// names its node. A task that exits 0 gets no line: srun's own end says
// it.

// StepAlivePrefix begins the line an orted of a job step (orted
// --slurm-step) writes first: "orted: alive on node3", its sign of life
// and its node, which is how the step's task ids are matched to hosts.
const StepAlivePrefix = "orted: alive on "

// labelled splits a line of srun --label into its task id and text.
func labelled(line string) (task int, text string, ok bool) {
	id, text, found := strings.Cut(line, ": ")
	if !found {
		return 0, "", false
	}
	task, err := strconv.Atoi(strings.TrimLeft(id, " "))
	if err != nil || task < 0 {
		return 0, "", false
	}
	return task, text, true
}

// aliveHost reads the host out of an orted's StepAlivePrefix line.
func aliveHost(text string) (string, bool) {
	host, ok := strings.CutPrefix(text, StepAlivePrefix)
	return strings.TrimSpace(host), ok && strings.TrimSpace(host) != ""
}

// taskExit is srun's report of tasks that ended with a failure.
type taskExit struct {
	node   string
	tasks  []int
	status *ExitError // without Stderr
}

// The regular expressions of srun's lines are compiled at their first use:
// at init they were most of this package's start, in every mpirun and
// orted, which mostly never read an srun line.
var taskExitRE = lazyRegexp(`^srun: error: (\S+): tasks? ([0-9,-]+): (.+)$`)

// parseTaskExit reads "srun: error: node3: task 2: Exited with exit code
// 2", "…: tasks 1-2: Killed", "…: task 0: Segmentation fault (core
// dumped)".
func parseTaskExit(line string) (taskExit, bool) {
	m := taskExitRE().FindStringSubmatch(line)
	if m == nil {
		return taskExit{}, false
	}
	tasks, ok := taskList(m[2])
	if !ok {
		return taskExit{}, false
	}
	return taskExit{node: m[1], tasks: tasks, status: exitWords(m[3])}, true
}

// taskList reads "0,3-5".
func taskList(s string) ([]int, bool) {
	var out []int
	for item := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a || b-a > 1<<20 {
			return nil, false
		}
		for t := a; t <= b; t++ {
			out = append(out, t)
		}
	}
	return out, true
}

// exitWords turns srun's words for a task's end into an ExitError:
// "Exited with exit code N", or the C library's name of the signal.
func exitWords(words string) *ExitError {
	words = strings.TrimSuffix(words, " (core dumped)")
	if code, ok := strings.CutPrefix(words, "Exited with exit code "); ok {
		if n, err := strconv.Atoi(code); err == nil {
			return &ExitError{Status: n}
		}
	}
	if sig, ok := signalWords[words]; ok {
		return &ExitError{Status: 128 + sig.number, Signal: sig.name}
	}
	return &ExitError{Status: -1, Stderr: words}
}

// signalWords are strsignal's descriptions, as srun prints them.
var signalWords = map[string]struct {
	name   string
	number int
}{
	"Hangup": {"HUP", 1}, "Interrupt": {"INT", 2}, "Quit": {"QUIT", 3},
	"Illegal instruction": {"ILL", 4}, "Aborted": {"ABRT", 6}, "Bus error": {"BUS", 7},
	"Floating point exception": {"FPE", 8}, "Killed": {"KILL", 9},
	"User defined signal 1": {"USR1", 10}, "Segmentation fault": {"SEGV", 11},
	"User defined signal 2": {"USR2", 12}, "Broken pipe": {"PIPE", 13},
	"Alarm clock": {"ALRM", 14}, "Terminated": {"TERM", 15},
}

// cancelledRE is what a node's slurmstepd writes on the step's stderr
// when Slurm cancels the step (scancel, the job's time limit), as its
// SIGTERM goes to every task: "slurmstepd: error: *** STEP 12.0 ON node1
// CANCELLED AT 2026-11-27T02:40:00 DUE TO TIME LIMIT ***" (JOB instead of
// STEP for scancel of the whole job).
var cancelledRE = lazyRegexp(`^(\d+: )?slurmstepd(-\S+)?: (error: )?\*\*\* (STEP|JOB) \S+ ON \S+ CANCELLED AT `)

// stepStderr joins a task's stderr lines into one, without what the
// caller says otherwise: srun's note that there is no CPU binding to
// turn off, and the prefix of the node's slurmstepd ("execve():
// /x/orted: No such file or directory").
func stepStderr(lines []string) string {
	var out []string
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || line == noCPUBinding || taskExitLine().MatchString(line) {
			continue
		}
		out = append(out, stepdPrefix().ReplaceAllString(line, ""))
	}
	return strings.Join(out, "; ")
}

// lazyRegexp compiles expr at its first use.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
