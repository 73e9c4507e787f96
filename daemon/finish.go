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

// flushWait bounds how long an exiting orted waits for its parent to take
// the last of its subtree's output.
const flushWait = 5 * time.Second

// finish ends the daemon as the machine decided. mpirun writes what is
// left of the ranks' unfinished lines: all of it on an orderly end, for at
// most abandonWait when it leaves without its daemons.
func (d *Daemon) finish(e protocol.Exit) {
	d.stdinTree.Close()
	for _, t := range d.timers {
		t.Stop()
	}
	if d.isRoot() {
		d.showWaiting("") // the machine took it away; a last guard all the same
		if e.Late != nil {
			d.gaveUp(e.Late)
		}
		wait := time.Duration(-1)
		if e.Abandon {
			wait = abandonWait
		}
		d.flushTerminal(wait)
		if d.dvm != nil {
			d.endDVM(e.Status)
		} else if e.Status == 0 && !d.outputComplete() {
			e.Status = 255
		}
		d.reportTimes()
	} else if d.upStream != nil {
		d.upStream.Close()
		if d.parent != nil {
			d.parent.conn.Flush(flushWait)
		}
	}
	d.exit <- e.Status
}

// outputComplete says whether every rank's output reached the terminal
// whole, and if not names the first rank that lost some: a job whose
// output was cut short must not end as a success.
func (d *Daemon) outputComplete() bool {
	app := d.plainApp()
	r, cut := d.terminal.CutShort(len(app.RankNode))
	if cut {
		fmt.Fprintf(d.cfg.Stderr, "mpirun: %s: the output of rank %d was cut short on its way to mpirun\n",
			d.machine.Job().Hosts[app.RankNode[r]], r)
	}
	return !cut
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
