package ranks

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"prsh/job/binding"
)

// cpusetCPUs are the CPUs of this process's cpuset cgroup (cgroup v1's
// cpuset hierarchy, else cgroup v2's cpuset.cpus.effective), as a batch
// system such as Slurm's task/cgroup confines a job; nil when none is
// readable. The kernel already keeps the affinity mask inside it; this
// is the second reading that a stale or widened mask cannot fool. Read
// once: a daemon's cgroup is set as it starts (a Slurm step's, a
// container's), a start that would bind outside a set changed since
// fails loudly (the kernel refuses the affinity), and reading the mount
// table at each start of ranks was a sixth of a DVM orted's CPU for a
// small job.
var cpusetCPUs = sync.OnceValue(readCpusetCPUs)

func readCpusetCPUs() []int {
	paths := ownCgroups()
	for _, m := range cgroupMounts() {
		path, ok := paths[m.hierarchy]
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.dir, path, m.file))
		if err != nil {
			continue
		}
		if ids, err := binding.ParseList(string(b)); err == nil && len(ids) > 0 {
			return ids
		}
	}
	return nil
}

// cgroupMount is where a hierarchy with the cpuset controller is mounted
// ("cpuset" for v1, "" for v2, as /proc/self/cgroup names them), and the
// file that lists its CPUs there.
type cgroupMount struct{ hierarchy, dir, file string }

// cgroupMounts finds the cpuset hierarchies mounted at their root, v1's
// first: on a hybrid system v2's has no cpuset controller.
func cgroupMounts() []cgroupMount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var v1, v2 []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		fields, super := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || fields[3] != "/" || len(super) < 3 {
			continue
		}
		switch {
		case super[0] == "cgroup" && hasOption(super[2], "cpuset"):
			v1 = append(v1, cgroupMount{"cpuset", fields[4], "cpuset.effective_cpus"})
		case super[0] == "cgroup2":
			v2 = append(v2, cgroupMount{"", fields[4], "cpuset.cpus.effective"})
		}
	}
	return append(v1, v2...)
}

func hasOption(options, name string) bool {
	for _, o := range strings.Split(options, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// ownCgroups maps each hierarchy's controllers ("cpuset", "" for v2) to
// this process's cgroup in it.
func ownCgroups() map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	paths := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
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
