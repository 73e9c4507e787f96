package ranks

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCpusetHoldsAffinity: the cpuset read from this process's cgroup
// holds every CPU the kernel lets it run on (the kernel keeps the mask
// inside it), so that intersecting the two never drops a usable CPU.
func TestCpusetHoldsAffinity(t *testing.T) {
	cpuset := cpusetCPUs()
	if cpuset == nil {
		t.Skip("no readable cpuset cgroup here")
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	in := map[int]bool{}
	for _, id := range cpuset {
		in[id] = true
	}
	for id := 0; id < 1024; id++ {
		if set.IsSet(id) && !in[id] {
			t.Errorf("cpu %d is in the affinity mask but not in the cpuset %v", id, cpuset)
		}
	}
}
