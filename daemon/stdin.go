package daemon

import (
	"prsh/iof"
)

// forwardStdin starts passing mpirun's stdin to the ranks it is for, once
// every rank has started, so that no input ever waits for a pipe.
func (d *Daemon) forwardStdin() {
	if d.cfg.Stdin == nil || d.app.StdinRank == StdinNone {
		return
	}
	target := d.app.StdinRank
	if target == StdinAll {
		target = iof.AllRanks
	}
	go func() {
		if err := iof.Pump(d.fanout, target, iof.StdinStream, d.cfg.Stdin); err != nil {
			d.log.Debug("stdin forwarding stopped", "error", err)
		}
	}()
}
