package cgroupfs

import (
	"reflect"
	"strings"
	"testing"
)

// A hybrid system's tables: v1 hierarchies with their controllers, v2 at
// /sys/fs/cgroup/unified, and mounts that are not cgroups or not at
// their root.
const mountinfo = `22 1 0:21 / / rw,relatime - ext4 /dev/vda1 rw
30 22 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
33 30 0:29 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset
34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
40 22 0:29 /job7 /mnt/inner rw - cgroup cgroup rw,cpuset
`

const cgroup = `12:cpuset:/slurm/uid_0/job_7
11:cpu,cpuacct:/user.slice
1:name=systemd:/user.slice/session-1.scope
0::/user.slice/session-1.scope
`

func TestParseMounts(t *testing.T) {
	got := parseMounts(strings.NewReader(mountinfo))
	want := []Mount{
		{Dir: "/sys/fs/cgroup/unified", V2: true, Options: []string{"rw", "nsdelegate"}},
		{Dir: "/sys/fs/cgroup/cpuset", Options: []string{"rw", "cpuset"}},
		{Dir: "/sys/fs/cgroup/cpu,cpuacct", Options: []string{"rw", "cpu", "cpuacct"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if !got[1].Has("cpuset") || got[2].Has("cpuset") {
		t.Errorf("Has(cpuset): %v, %v; want true, false", got[1].Has("cpuset"), got[2].Has("cpuset"))
	}
}

func TestParseOwn(t *testing.T) {
	got := parseOwn(cgroup)
	want := map[string]string{
		"cpuset": "/slurm/uid_0/job_7", "cpu": "/user.slice", "cpuacct": "/user.slice",
		"name=systemd": "/user.slice/session-1.scope", "": "/user.slice/session-1.scope",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
