package daemon

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"

	"prsh/errmgr"
)

// drainTimeout bounds how long mpirun waits, after deciding the job's end,
// for every daemon to flush its output and exit. Daemons still running
// after it lose their lifeline when mpirun exits, and exit too.
const drainTimeout = 15 * time.Second

// failure words a failure at this daemon's node.
func (d *Daemon) failure(status int, format string, args ...any) Failure {
	return d.failureAt(d.cfg.Node, status, format, args...)
}

func (d *Daemon) failureAt(node string, status int, format string, args ...any) Failure {
	return Failure{Msg: node + ": " + fmt.Sprintf(format, args...), Status: status}
}

// fail reports a failure to mpirun, which ends the job on the first one.
func (d *Daemon) fail(f Failure) {
	if !d.isRoot() {
		if !d.ending {
			d.parent.send(f)
		}
		return
	}
	if !d.policy.Fail(f.Status) {
		return
	}
	fmt.Fprintf(d.cfg.Stderr, "mpirun: %s\n", f.Msg)
	d.teardown(true)
}

// report passes a skipped node up to mpirun, which warns the user and
// leaves the node out of the job map.
func (d *Daemon) report(s Skipped) {
	if !d.isRoot() {
		d.parent.send(s)
		return
	}
	d.skipped[s.ID] = true
	fmt.Fprintf(d.cfg.Stderr, "mpirun: warning: %s (left out: --on-unreachable skip)\n", s.Msg)
}

func (d *Daemon) reach(kind int) {
	d.progress[kind].local = true
	d.checkMilestone(kind)
}

// checkMilestone reports a milestone up the spawn tree once this daemon and
// every direct child have reached it.
func (d *Daemon) checkMilestone(kind int) {
	m := &d.progress[kind]
	if m.reported || !m.local || len(m.children) < d.liveChildren() {
		return
	}
	m.reported = true
	if !d.isRoot() {
		d.parent.send(Milestone{Kind: kind})
		return
	}
	m.at = time.Since(d.cfg.Start)
	switch {
	case kind == Spawned && d.job.SkipUnreachable:
		d.launchSurvivors()
	case kind == Started:
		d.forwardStdin()
	case kind == Exited && d.policy.Finish():
		d.teardown(false)
	}
}

// liveChildren counts the direct children expected to report milestones:
// those not given up on.
func (d *Daemon) liveChildren() int {
	n := 0
	for _, c := range d.children {
		if !c.failed {
			n++
		}
	}
	return n
}

func (d *Daemon) checkAllMilestones() {
	for k := range d.progress {
		d.checkMilestone(k)
	}
}

// teardown ends the job in this daemon's subtree: pass it on, stop the
// ranks, then wait for everything to drain (maybeFinish).
func (d *Daemon) teardown(kill bool) {
	if d.ending {
		return
	}
	d.ending = true
	for _, c := range d.children {
		switch {
		case c.connected && !c.linkDown:
			c.link.send(Teardown{Kill: kill})
		case c.proc != nil:
			go c.proc.Close()
		}
	}
	if kill {
		d.killRanks(syscall.SIGTERM)
		d.after(time.Duration(d.job.KillGraceMS)*time.Millisecond, func() { d.killRanks(syscall.SIGKILL) })
	} else {
		d.killRanks(syscall.SIGKILL) // what the ranks left behind
	}
	if d.isRoot() {
		d.after(drainTimeout, d.giveUp)
	}
	d.maybeFinish()
}

// maybeFinish exits once the job is over here: ranks reaped, their output
// and the children's output passed on, children gone.
func (d *Daemon) maybeFinish() {
	if !d.ending || d.finished {
		return
	}
	for _, r := range d.ranks {
		if !r.reaped || r.openPipes > 0 {
			return
		}
	}
	for _, c := range d.children {
		if !c.drained() {
			return
		}
	}
	d.finish(d.policy.Status())
}

func (d *Daemon) finish(status int) {
	d.finishFlushing(status, -1)
}

// finishFlushing ends the daemon. mpirun writes what is left of the ranks'
// unfinished lines, waiting at most flushWait for a reader that does not
// read (forever when negative: an orderly end delivers everything).
func (d *Daemon) finishFlushing(status int, flushWait time.Duration) {
	d.finished = true
	d.fanout.Close()
	if d.isRoot() {
		d.flushTerminal(flushWait)
		d.reportTimes()
	} else if d.upStream != nil {
		d.upStream.Close()
	}
	d.exit <- status
}

func (d *Daemon) flushTerminal(wait time.Duration) {
	if wait < 0 {
		d.terminal.Flush()
		return
	}
	done := make(chan struct{})
	go func() {
		d.terminal.Flush()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// abandonWait is how long mpirun, ending without its daemons (given up on,
// or a second Ctrl-C), waits for a stalled stdout before leaving the rest.
const abandonWait = time.Second

// giveUp ends mpirun when some daemons did not finish in time.
func (d *Daemon) giveUp() {
	if d.finished {
		return
	}
	var late []string
	for _, c := range d.children {
		if !c.drained() {
			late = append(late, c.host)
		}
	}
	sort.Strings(late)
	why := ""
	if d.terminal.Stalled() {
		why = ": their ranks' output waits for mpirun's stdout or stderr to be read"
	}
	fmt.Fprintf(d.cfg.Stderr, "mpirun: gave up waiting for %s to finish%s\n", strings.Join(late, ", "), why)
	status := d.policy.Status()
	if status == 0 {
		status = errmgr.StatusFailed
	}
	d.finishFlushing(status, abandonWait)
}

// lifelineLost ends an orted whose parent is gone: nothing may outlive it.
func (d *Daemon) lifelineLost(why string) {
	if d.finished {
		return
	}
	d.log.Warn("exiting: " + why)
	d.killRanks(syscall.SIGKILL)
	d.ending = true
	d.finish(1)
}

// killEverything answers a second interrupt: no more grace.
func (d *Daemon) killEverything() {
	if d.finished {
		return
	}
	for _, c := range d.children {
		if c.connected && !c.linkDown {
			c.link.send(Teardown{Kill: true})
		}
		if c.proc != nil {
			go c.proc.Close()
		}
	}
	d.killRanks(syscall.SIGKILL)
	d.finishFlushing(d.policy.Status(), abandonWait)
}

func (d *Daemon) reportTimes() {
	if !d.cfg.ReportTimes {
		return
	}
	parts := make([]string, numMilestones)
	for k := range d.progress {
		at := "never"
		if d.progress[k].reported {
			at = fmt.Sprintf("%.3fs", d.progress[k].at.Seconds())
		}
		parts[k] = milestoneNames[k] + " " + at
	}
	fmt.Fprintf(d.cfg.Stderr, "mpirun: launch times: %s\n", strings.Join(parts, ", "))
}
