package guard

import (
	"fmt"
	"os"
	"syscall"
)

// RankStart is a rank for the guard to start: its job, its program,
// where it runs, its CPUs, and its descriptors, which the guard gets
// copies of.
type RankStart struct {
	// Job is the guard's number for the rank's job: one guard serves
	// every job of its daemon (a DVM's), and kills them one by one.
	Job int
	// Cgroup is the job's cgroup (a prsh-job-* directory) to start the
	// rank in; "" for none.
	Cgroup string
	Rank   int
	Path   string
	Args   []string
	Env    []string
	Dir    string
	CPUs   []int // none: unbound
	// Stdin nil reads /dev/null.
	Stdin, Stdout, Stderr *os.File
	// Files are the rank's from descriptor 3 on (its PMI socket).
	Files []*os.File
}

// encode is the start message and the descriptors it passes.
func (s RankStart) encode() (message, []*os.File) {
	m := newMessage(kindStart).int(s.Job).string(s.Cgroup).int(s.Rank).string(s.Path).string(s.Dir).strings(s.Args).strings(s.Env)
	m = m.int(len(s.CPUs))
	for _, cpu := range s.CPUs {
		m = m.int(cpu)
	}
	files := []*os.File{s.Stdout, s.Stderr}
	hasStdin := 0
	if s.Stdin != nil {
		hasStdin = 1
		files = append(files, s.Stdin)
	}
	m = m.int(hasStdin).int(len(s.Files))
	return m, append(files, s.Files...)
}

// decodeStart reads a start message's fields after its kind.
func decodeStart(body []byte, files []*os.File) (RankStart, error) {
	r := &reader{b: body}
	s := RankStart{Job: r.int(), Cgroup: r.string(), Rank: r.int(), Path: r.string(), Dir: r.string(), Args: r.strings(), Env: r.strings()}
	cpus := r.int()
	for i := 0; i < cpus && r.err == nil; i++ {
		s.CPUs = append(s.CPUs, r.int())
	}
	hasStdin, extra := r.int(), r.int()
	if r.err != nil || len(files) != 2+hasStdin+extra || hasStdin > 1 || len(s.Args) == 0 {
		return s, fmt.Errorf("a malformed start of rank %d", s.Rank)
	}
	s.Stdout, s.Stderr, files = files[0], files[1], files[2:]
	if hasStdin == 1 {
		s.Stdin, files = files[0], files[1:]
	}
	s.Files = files
	return s, nil
}

// ReportKind is what became of a rank the guard was asked to start.
type ReportKind byte

// The reports' kinds, as the guard sends them.
const (
	Running ReportKind = kindRunning
	Failed  ReportKind = kindFailed
	Exited  ReportKind = kindExited
)

// Report is what the guard says of a rank of Job: it runs (Pid), it
// could not start (Status: the shell's, Err: why), or it ended (Wait).
type Report struct {
	Kind   ReportKind
	Job    int
	Rank   int
	Pid    int
	Wait   syscall.WaitStatus
	Status int
	Err    string
}

func (r Report) encode() message {
	m := newMessage(byte(r.Kind)).int(r.Job).int(r.Rank)
	switch r.Kind {
	case Running:
		m = m.int(r.Pid)
	case Failed:
		m = m.int(r.Status).string(r.Err)
	case Exited:
		m = m.uint(uint64(uint32(r.Wait)))
	}
	return m
}

func decodeReport(body []byte) (Report, error) {
	if len(body) == 0 {
		return Report{}, errMalformed
	}
	rep := Report{Kind: ReportKind(body[0])}
	r := &reader{b: body[1:]}
	rep.Job, rep.Rank = r.int(), r.int()
	switch rep.Kind {
	case Running:
		rep.Pid = r.int()
	case Failed:
		rep.Status, rep.Err = r.int(), r.string()
	case Exited:
		rep.Wait = syscall.WaitStatus(uint32(r.uint()))
	default:
		return rep, errMalformed
	}
	return rep, r.err
}
