package daemon

import (
	"errors"
	"net"
	"path/filepath"
	"strings"

	"prsh/daemon/protocol"
	"prsh/stage"
)

// Staging (mpirun --preload-binary, --preload-libs): the files of
// JobSpec.Stage come down the parent's stage stream into this node's
// stage directory and go on to each child from that copy as it grows
// (package stage). The machine starts the ranks once the copy is whole.

// makeStage makes this orted's stage directory when the job stages
// files. One it cannot make fails the node when its ranks are due.
func (d *Daemon) makeStage(job protocol.JobSpec) {
	if len(job.Stage) == 0 {
		return
	}
	c, err := stage.NewCopy(job.Stage)
	if err != nil {
		d.next = append(d.next, protocol.Staged{Err: stagingError(err)})
		return
	}
	d.log.Debug("staging into", "dir", c.Dir)
	d.staged = c
}

// receiveStage writes the parent's stage stream into this node's copy.
func (d *Daemon) receiveStage(s net.Conn) {
	defer s.Close()
	if d.staged == nil {
		return // the failure to make the directory is the node's error
	}
	if err := stage.Receive(s, d.staged); err != nil {
		if d.ctx.Err() == nil { // not the daemon's own end
			d.post(protocol.Staged{Err: stagingError(err)})
		}
		return
	}
	d.post(protocol.Staged{})
}

// sendStage sends the staged files to a child: mpirun the originals,
// an orted its own copy. A child's stream that breaks is that child's
// failure, reported as its link's; a source that cannot be read at
// mpirun is the job's.
func (d *Daemon) sendStage(child int, l *link) {
	var src stage.Source = stage.Originals(d.machine.Job().Stage)
	if !d.isRoot() {
		if d.staged == nil {
			return
		}
		src = d.staged
	}
	s, err := openStream(l.conn, streamStage)
	if err != nil {
		return
	}
	defer s.Close()
	err = stage.Send(s, d.machine.Job().Stage, src)
	var se stage.SourceError
	if errors.As(err, &se) && d.isRoot() {
		d.post(protocol.Staged{Err: stagingError(err)})
	}
	if err != nil {
		d.log.Debug("staging to a child stopped", "daemon", child, "error", err)
	}
}

func stagingError(err error) string { return "--preload-binary: " + err.Error() }

// removeStage removes this node's stage directory as the daemon exits.
func (d *Daemon) removeStage() {
	if d.staged == nil {
		return
	}
	if err := d.staged.Remove(); err != nil {
		d.log.Warn("cannot remove the stage directory", "dir", d.staged.Dir, "error", err)
	}
}

// stagedProgram is the staged copy of argv0 on this node, if there is one.
func (d *Daemon) stagedProgram(argv0 string) (string, bool) {
	if d.staged == nil {
		return "", false
	}
	return d.staged.Program(argv0)
}

// stagedLibraryPath puts the staged libraries first in the rank's
// LD_LIBRARY_PATH (the last one in env is what the rank gets).
func (d *Daemon) stagedLibraryPath(env []string) []string {
	if d.staged == nil || d.staged.LibDir() == "" {
		return env
	}
	path := d.staged.LibDir()
	for i := len(env) - 1; i >= 0; i-- {
		if old, ok := strings.CutPrefix(env[i], "LD_LIBRARY_PATH="); ok {
			if old != "" {
				path += string(filepath.ListSeparator) + old
			}
			break
		}
	}
	return append(env, "LD_LIBRARY_PATH="+path)
}
