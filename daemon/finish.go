package daemon

import (
	"fmt"
	"strings"
	"time"

	"prsh/daemon/protocol"
)

// abandonWait is how long mpirun, ending without its daemons (given up on,
// or a second Ctrl-C), waits for a stalled stdout before leaving the rest.
const abandonWait = time.Second

// finish ends the daemon as the machine decided. mpirun writes what is
// left of the ranks' unfinished lines: all of it on an orderly end, for at
// most abandonWait when it leaves without its daemons.
func (d *Daemon) finish(e protocol.Exit) {
	d.fanout.Close()
	for _, t := range d.timers {
		t.Stop()
	}
	if d.isRoot() {
		if e.Late != nil {
			d.gaveUp(e.Late)
		}
		wait := time.Duration(-1)
		if e.Abandon {
			wait = abandonWait
		}
		d.flushTerminal(wait)
		d.reportTimes()
	} else if d.upStream != nil {
		d.upStream.Close()
	}
	d.exit <- e.Status
}

// gaveUp tells the user which daemons did not finish in time, and why
// when mpirun can tell.
func (d *Daemon) gaveUp(late []string) {
	who := strings.Join(late, ", ")
	if who == "" {
		who = "the ranks"
	}
	why := ""
	if d.terminal.Stalled() {
		why = ": their ranks' output waits for mpirun's stdout or stderr to be read"
	}
	fmt.Fprintf(d.cfg.Stderr, "mpirun: gave up waiting for %s to finish%s\n", who, why)
}

// flushTerminal writes what is left, waiting at most wait for a reader
// that does not read (for ever when negative).
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

func (d *Daemon) reportTimes() {
	if !d.cfg.ReportTimes {
		return
	}
	parts := make([]string, protocol.NumMilestones)
	for k := range parts {
		at := "never"
		if d.reached[k] {
			at = fmt.Sprintf("%.3fs", d.reachedAt[k].Seconds())
		}
		parts[k] = protocol.MilestoneNames[k] + " " + at
	}
	fmt.Fprintf(d.cfg.Stderr, "mpirun: launch times: %s\n", strings.Join(parts, ", "))
}
