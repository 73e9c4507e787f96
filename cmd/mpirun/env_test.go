package main

import (
	"testing"

	"prsh/testbed"
)

// TestEnvironmentForwarding: nothing of mpirun's environment by default;
// -x with globs, Hydra's -genv family, a warning for what is not set, and
// the rank variables scripts read: 3 ranks on 2 nodes of 2 slots, so that
// the local rank and size differ between the nodes.
func TestEnvironmentForwarding(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	t.Setenv("HABIT_A", "a,1")
	t.Setenv("HABIT_B", "b 2")
	show := `echo "$PMI_RANK/$PMI_SIZE $OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE/$OMPI_COMM_WORLD_LOCAL_RANK/$OMPI_COMM_WORLD_LOCAL_SIZE a=$HABIT_A b=$HABIT_B g=$G"`
	cases := []struct {
		name   string
		args   []string
		values string // after the rank variables
		stderr string
	}{
		{"default", nil, "a= b= g=", ""},
		{"glob", []string{"-x", "HABIT_*"}, "a=a,1 b=b 2 g=", ""},
		{"genv", []string{"-genv", "G", "x, y", "-genvlist", "HABIT_A,HABIT_B"}, "a=a,1 b=b 2 g=x, y", ""},
		{"genvall", []string{"-genvall", "-genv", "HABIT_B", "over"}, "a=a,1 b=over g=", ""},
		{"genvnone", []string{"-genvnone", "-x", "G=1"}, "a= b= g=1", ""},
		{"unset", []string{"-x", "HABIT_UNSET"}, "a= b= g=",
			`^mpirun: warning: -x HABIT_UNSET: not set in mpirun's environment, so not exported$`},
		{"glob matching nothing", []string{"-x", "NO_HABIT_*"}, "a= b= g=",
			`^mpirun: warning: -x NO_HABIT_\*: no variable of mpirun's environment matches$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(append([]string{"-np", "3"}, tc.args...), "sh", "-c", show)...)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			wantSet(t, res.stdout, "0/3 0/3/0/2 "+tc.values, "1/3 1/3/1/2 "+tc.values, "2/3 2/3/0/1 "+tc.values)
			checkOneLine(t, res.stderr, tc.stderr)
		})
	}
}
