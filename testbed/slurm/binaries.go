package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"prsh/testbed"
)

// ErrUnavailable is wrapped by the errors of Available and Start when this
// machine cannot run the cluster at all (tests skip on it).
var ErrUnavailable = errors.New("slurm testbed unavailable")

const installHint = "apt-get install slurmctld slurmd slurm-client munge"

// binaries are the programs the cluster runs. The daemons are looked up
// by their -wlm names first: Debian's /usr/sbin/slurmd is an alternative
// that slurm-wlm-emulator (a front-end build, useless here) takes over.
type binaries struct {
	munged, slurmctld, slurmd, ip, nsenter, sinfo string
}

func findBinaries() (binaries, error) {
	var b binaries
	var missing []string
	find := func(dst *string, names ...string) {
		for _, n := range names {
			if p, err := lookSbin(n); err == nil {
				// Resolved, to compare with /proc/PID/exe.
				if real, err := filepath.EvalSymlinks(p); err == nil {
					p = real
				}
				*dst = p
				return
			}
		}
		missing = append(missing, names[0])
	}
	find(&b.munged, "munged")
	find(&b.slurmctld, "slurmctld-wlm", "slurmctld")
	find(&b.slurmd, "slurmd-wlm", "slurmd")
	find(&b.ip, "ip")
	find(&b.nsenter, "nsenter")
	find(&b.sinfo, "sinfo")
	if len(missing) > 0 {
		return b, fmt.Errorf("%w: %v not found (%s; ip and nsenter are in iproute2 and util-linux)", ErrUnavailable, missing, installHint)
	}
	return b, nil
}

// lookSbin looks name up in the PATH, then in the sbin directories, which
// an ordinary user's PATH may lack.
func lookSbin(name string) (string, error) {
	return testbed.LookPath(name, os.Getenv("PATH")+":/usr/sbin:/sbin:/usr/bin")
}

// Available tells whether Start can work here: it needs root (namespaces,
// mounts, daemons that switch to the job's user) and the Slurm, munge,
// iproute2 and util-linux binaries.
//
// An ordinary user would need a user namespace mapping them to root
// (CLONE_NEWUSER, as `unshare -r` does) around the cluster's namespaces;
// slurmstepd would then run jobs as that mapped root, and munged and
// slurmd would have to accept a root that owns none of the host's files.
// That is not tried yet.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (private network, mount and PID namespaces; daemons that run jobs as their user)", ErrUnavailable)
	}
	_, err := findBinaries()
	return err
}
