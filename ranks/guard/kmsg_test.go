package guard

import "testing"

// TestRecordsOOMKill: of records as /dev/kmsg returns them, only the OOM
// killer's kill of the pid asked about says so.
func TestRecordsOOMKill(t *testing.T) {
	const cgroupKill = "3,661,5442997281,-;Memory cgroup out of memory: Killed process 31585 (sh) total-vm:125496kB, anon-rss:65404kB, file-rss:1596kB, shmem-rss:0kB, UID:0 pgtables:196kB oom_score_adj:500\n"
	const globalKill = "3,1180,90210554,-;Out of memory: Killed process 4242 (a.out) total-vm:2203932kB, anon-rss:1953048kB, file-rss:4kB, shmem-rss:0kB, UID:1000 pgtables:3876kB oom_score_adj:500\n"
	const withContinuation = "3,661,5442997281,-;Memory cgroup out of memory: Killed process 31585 (sh) total-vm:125496kB\n SUBSYSTEM=memory\n"
	const killInContinuation = "6,703,23762129599,-;virtio_net virtio0 eth0: link up\n SUBSYSTEM=virtio\n NOTE=Killed process 31585 (sh)\n"
	cases := []struct {
		name   string
		record string
		pid    int
		want   bool
	}{
		{"a memory cgroup's kill of the pid", cgroupKill, 31585, true},
		{"a machine-wide kill of the pid", globalKill, 4242, true},
		{"the kill of another pid", cgroupKill, 3158, false},
		{"the kill of a pid that begins the same", globalKill, 42, false},
		{"the kill of a pid that ends the same", cgroupKill, 1585, false},
		{"a kill followed by continuation lines", withContinuation, 31585, true},
		{"the pid in a continuation line only", killInContinuation, 31585, false},
		{"a record cut before its message", "3,661,5442997281", 31585, false},
		{"a record cut inside its message", "3,661,5442997281,-;Memory cgroup out of memory: Killed process 315", 31585, false},
		{"the reaper's record", "6,662,5442997300,-;oom_reaper: reaped process 31585 (sh), now anon-rss:0kB\n", 31585, false},
	}
	for _, c := range cases {
		if got := recordsOOMKill([]byte(c.record), c.pid); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
