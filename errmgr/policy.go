// Package errmgr decides what a failure means for the job: the abort
// policy and the exit statuses it gives. It is pure; errmgr/status holds
// the process side (how a process's end reads to the user and to the
// shell). The guard that keeps a rank from outliving its daemon is
// ranks/guard.
package errmgr

// Exit statuses of mpirun besides the ranks' own.
const (
	StatusFailed  = 255 // a node or daemon failed
	StatusTimeout = 124 // --timeout expired
)

// Policy is the abort-on-first-failure policy of mpirun: the first
// failure ends the job and gives it its exit status; what fails after it
// (often because of the abort itself) changes nothing.
type Policy struct {
	ended, failed bool
	status        int
}

// Fail records a failure with the exit status it implies, and reports
// whether it is the one that ends the job.
func (p *Policy) Fail(status int) bool {
	if p.ended {
		return false
	}
	p.ended, p.failed, p.status = true, status != 0, status
	return true
}

// Overturn records a failure that caused the job's normal end (Slurm's
// SIGTERM, on which the ranks exited 0 before their daemon could say
// it got it too): it replaces a success, never a failure, and reports
// whether it did.
func (p *Policy) Overturn(status int) bool {
	if p.failed {
		return false
	}
	p.ended, p.failed, p.status = true, true, status
	return true
}

// Finish records that the job ended normally, unless a failure ended it
// first. It reports whether the job was still running.
func (p *Policy) Finish() bool { return p.Fail(0) }

// Status is the job's exit status.
func (p *Policy) Status() int { return p.status }
