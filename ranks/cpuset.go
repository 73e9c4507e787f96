package ranks

import (
	"os"
	"path/filepath"
	"sync"

	"prsh/internal/cgroupfs"
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
	paths := cgroupfs.Own()
	for _, m := range cpusetMounts() {
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

// cpusetMount is where a hierarchy with the cpuset controller is mounted
// ("cpuset" for v1, "" for v2, as /proc/self/cgroup names them), and the
// file that lists its CPUs there.
type cpusetMount struct{ hierarchy, dir, file string }

// cpusetMounts are the cpuset hierarchies mounted at their root, v1's
// first: on a hybrid system v2's has no cpuset controller.
func cpusetMounts() []cpusetMount {
	var v1, v2 []cpusetMount
	for _, m := range cgroupfs.Mounts() {
		switch {
		case m.V2:
			v2 = append(v2, cpusetMount{"", m.Dir, "cpuset.cpus.effective"})
		case m.Has("cpuset"):
			v1 = append(v1, cpusetMount{"cpuset", m.Dir, "cpuset.effective_cpus"})
		}
	}
	return append(v1, v2...)
}
