package daemon

import (
	"io"
	"strings"

	"prsh/daemon/protocol"
	"prsh/iof"
)

// forwardStdin starts passing mpirun's stdin to the ranks it is for, once
// every rank has started, so that no input ever waits for a pipe. When
// mpirun reads nothing (it runs in the background of a terminal), the
// ranks' input still ends: they get EOF, not a pipe that never closes.
func (d *Daemon) forwardStdin() {
	app := d.plainApp()
	if app.StdinRank == protocol.StdinNone {
		return
	}
	var input io.Reader = strings.NewReader("")
	if d.cfg.Stdin != nil {
		input = d.cfg.Stdin
	}
	target := app.StdinRank
	if target == protocol.StdinAll {
		target = iof.AllRanks
	}
	go func() {
		if err := iof.Pump(d.stdinTree, target, iof.StdinStream, input); err != nil {
			d.log.Debug("stdin forwarding stopped", "error", err)
		}
	}()
}
