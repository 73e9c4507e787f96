// Package cgroupfs reads, once per process, where the cgroup hierarchies
// are mounted and which cgroup this process is in: the job cgroup
// (ranks/guard) and the cpuset (ranks) both need them, and a DVM's
// daemon must not read the mount table again for every job.
package cgroupfs

import (
	"bufio"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// Mount is a cgroup hierarchy mounted at its root.
type Mount struct {
	Dir     string   // the mount point
	V2      bool     // cgroup2; else a v1 hierarchy
	Options []string // its super options (a v1 hierarchy's controllers among them)
}

// Has says whether a v1 hierarchy's options name controller.
func (m Mount) Has(controller string) bool { return slices.Contains(m.Options, controller) }

// Mounts are the cgroup hierarchies mounted at their root, in the mount
// table's order.
var Mounts = sync.OnceValue(func() []Mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseMounts(f)
})

// parseMounts reads a mount table in /proc/PID/mountinfo's form.
func parseMounts(r io.Reader) []Mount {
	var mounts []Mount
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, super := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || fields[3] != "/" || len(super) < 3 {
			continue
		}
		switch super[0] {
		case "cgroup", "cgroup2":
			mounts = append(mounts, Mount{Dir: fields[4], V2: super[0] == "cgroup2", Options: strings.Split(super[2], ",")})
		}
	}
	return mounts
}

// Own maps each hierarchy's controllers ("cpuset", …; "" for v2) to this
// process's cgroup in it, as /proc/self/cgroup says them.
var Own = sync.OnceValue(func() map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	return parseOwn(string(b))
})

// parseOwn reads /proc/PID/cgroup's lines.
func parseOwn(s string) map[string]string {
	paths := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		// ID:CONTROLLERS:PATH
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	return paths
}
