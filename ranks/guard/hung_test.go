package guard

import (
	"os"
	"testing"
)

// TestHung: a stopped daemon is hung at once; one in the kernel only
// when it was there a tick before and has not run since, so that a busy
// daemon caught in D at every tick of a loaded host is not killed.
func TestHung(t *testing.T) {
	const ran, ranMore = "3264897 8086679 2\n", "3301012 8090001 3\n"
	cases := []struct {
		name      string
		now, prev sample
		want      bool
	}{
		{"stopped", sample{state: "T"}, sample{state: "S"}, true},
		{"stopped under a tracer", sample{state: "t"}, sample{state: "t"}, false},
		{"running", sample{state: "R"}, sample{state: "D", ran: ran}, false},
		{"first seen in D", sample{state: "D", ran: ran}, sample{state: "S"}, false},
		{"in D without running since", sample{state: "D", ran: ran}, sample{state: "D", ran: ran}, true},
		{"in D again after running", sample{state: "D", ran: ranMore}, sample{state: "D", ran: ran}, false},
		{"in D, no schedstat", sample{state: "D"}, sample{state: "D"}, true},
		{"gone", sample{}, sample{}, false},
	}
	for _, c := range cases {
		if got := c.now.hung(c.prev); got != c.want {
			t.Errorf("%s: hung = %v, want %v", c.name, got, c.want)
		}
	}
	if s := sampleOf(os.Getpid()); s.state != "R" && s.state != "S" {
		t.Errorf("this process sampled in state %q", s.state)
	}
}
