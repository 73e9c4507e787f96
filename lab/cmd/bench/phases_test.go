package main

import "testing"

func TestParseLaunchTimes(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		want   launchTimes
	}{
		{"mpirun: launch times: phase 1 (daemons spawned) 0.052s, phase 2 (addresses exchanged) 0.062s, ranks started 0.053s, ranks exited 1.5s\n",
			launchTimes{0.052, 0.062, 0.053, 1.5}},
		{"mpirun: warning: x\nmpirun: launch times: phase 1 (daemons spawned) 2.000s, phase 2 (addresses exchanged) never, ranks started 2.100s, ranks exited 2.200s",
			launchTimes{2, -1, 2.1, 2.2}},
		{"mpirun: node003: rank 2 was killed by signal 9 (SIGKILL)\n", launchTimes{-1, -1, -1, -1}},
		{"mpirun: launch times: ranks started 1s", launchTimes{-1, -1, -1, -1}}, // out of order: not trusted
		{"mpirun: launch times: phase 1 (daemons spawned) 3s", launchTimes{3, -1, -1, -1}},
	} {
		if got := parseLaunchTimes(tc.stderr); got != tc.want {
			t.Errorf("parseLaunchTimes(%q) = %v, want %v", tc.stderr, got, tc.want)
		}
	}
}

func TestMilestoneMedian(t *testing.T) {
	p := benchPoint{times: []launchTimes{{1, -1, 3, 4}, {2, -1, 1, 4}, {3, -1, 2, 4}}}
	if got := p.milestone(0); got != 2 {
		t.Errorf("phase 1's median %v, want 2", got)
	}
	if got := p.milestone(1); got != -1 {
		t.Errorf("a milestone no run reached: %v, want -1", got)
	}
	if got := p.milestone(2); got != 2 {
		t.Errorf("ranks started's median %v, want 2", got)
	}
}

// TestFailureLineBeforeLaunchTimes: a failed launch of ours is reported
// by its failure's line, not by the launch times printed after it.
func TestFailureLineBeforeLaunchTimes(t *testing.T) {
	for stderr, want := range map[string]string{
		"mpirun: node003: rank 2 exited with status 5\nmpirun: launch times: phase 1 (daemons spawned) 1s, phase 2 (addresses exchanged) never, ranks started 1s, ranks exited 2s\n": "mpirun: node003: rank 2 exited with status 5",
		"pdsh@vm: node001: ssh exited with exit code 255\n":     "pdsh@vm: node001: ssh exited with exit code 255",
		"mpirun: launch times: phase 1 (daemons spawned) never": "mpirun: launch times: phase 1 (daemons spawned) never",
	} {
		if got := lastLine(stderr); got != want {
			t.Errorf("lastLine(%q) = %q, want %q", stderr, got, want)
		}
	}
}
