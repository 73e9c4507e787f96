package main

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"prsh/testbed"
)

func TestExitStatus(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	cases := []struct {
		name   string
		args   []string
		status int
		stderr string // regexp the one line must match; "" = no output
	}{
		{"all zero", []string{"/bin/true"}, 0, ""},
		{"rank exits 3", []string{"sh", "-c", `[ "$PRSH_RANK" = 1 ] && exit 3; sleep 30`}, 3,
			`^mpirun: node002: rank 1 exited with status 3$`},
		{"every rank exits 3", []string{"sh", "-c", "exit 3"}, 3, `^mpirun: node00[1-3]: rank [0-2] exited with status 3$`},
		{"rank killed by a signal", []string{"sh", "-c", `[ "$PRSH_RANK" = 2 ] && kill -SEGV $$; sleep 30`}, 128 + 11,
			`^mpirun: node003: rank 2 was killed by signal 11 \(SIGSEGV\)$`},
		{"command not found", []string{"no-such-command-xyz"}, 127,
			`^mpirun: node00[1-3]: rank [0-2]: cannot run no-such-command-xyz: executable file not found in \$PATH$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, tc.args...)
			if res.status != tc.status {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.status, tc.status, res.stderr)
			}
			checkOneLine(t, res.stderr, tc.stderr)
		})
	}
}

// checkOneLine checks that stderr is exactly one line matching pattern, or
// empty when pattern is "".
func checkOneLine(t *testing.T, stderr, pattern string) {
	t.Helper()
	got := lines(stderr)
	if pattern == "" {
		if len(got) != 0 {
			t.Errorf("stderr not empty:\n%s", stderr)
		}
		return
	}
	if len(got) != 1 || !regexp.MustCompile(pattern).MatchString(got[0]) {
		t.Errorf("stderr:\n%s\nwant one line matching %s", stderr, pattern)
	}
}

// TestSeveralRanksPerNode places ranks by slot and by node.
func TestSeveralRanksPerNode(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2})
	names := c.Nodes()
	n1, n2, n3 := names[0].Name, names[1].Name, names[2].Name
	cases := []struct {
		name string
		args []string
		want []string // node of each rank
	}{
		{"hostfile slots, by slot", []string{"-np", "6"}, []string{n1, n1, n2, n2, n3, n3}},
		{"hostfile slots, by node", []string{"-np", "5", "--map-by", "node"}, []string{n1, n2, n3, n1, n2}},
		{"-H with slots", []string{"-H", n1 + ":3," + n3, "-np", "4"}, []string{n1, n1, n1, n3}},
		{"npernode", []string{"--npernode", "2"}, []string{n1, n1, n2, n2, n3, n3}},
		{"oversubscribe", []string{"-np", "8", "--oversubscribe"}, []string{n1, n1, n2, n2, n3, n3, n1, n2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "sh", "-c", `echo "$PRSH_RANK $PRSH_TESTBED_NODE $PRSH_SIZE"`)
			res := mpirun(t, c, args...)
			if res.status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
			}
			got := lines(res.stdout)
			sort.Slice(got, func(i, j int) bool { return rankOf(got[i]) < rankOf(got[j]) })
			var want []string
			for r, node := range tc.want {
				want = append(want, strings.Join([]string{itoa(r), node, itoa(len(tc.want))}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("placement:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestTooManyRanks(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "-np", "3", "/bin/true")
	if res.status != statusUsage {
		t.Errorf("exit %d, want %d", res.status, statusUsage)
	}
	checkOneLine(t, res.stderr, `^mpirun: .*-np 3 exceeds the 2 slots.*--oversubscribe`)
}
