package daemon

import "prsh/internal/fdlimit"

// name is this daemon as the user knows it, in the errors that name its
// limits: the line may name another node (a child it failed to spawn).
func (d *Daemon) name() string {
	if d.isRoot() {
		return "mpirun"
	}
	return "the orted on " + d.cfg.Node
}

// explain says which limit an error reached, where it reached one.
func (d *Daemon) explain(err error) error { return fdlimit.Explain(err, d.name()) }
