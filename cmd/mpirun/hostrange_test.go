package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"prsh/testbed"
)

// TestHostfileRanges: a hostfile names hosts with Slurm-style ranges as
// -H does: each host of a range gets the line's slots, hosts keep the
// order of their first mention, and a host named again adds slots.
func TestHostfileRanges(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	ranges := writeHostfile(t, "node[001-003] slots=2\n")
	repeats := writeHostfile(t, "# a list in brackets, a repeat\nnode[001-002] slots=2\nnode[003,001]\n")
	checkPlacements(t, c, []placement{
		{"range with slots", []string{"--hostfile", ranges},
			[]string{"0 node001", "1 node001", "2 node002", "3 node002", "4 node003", "5 node003"}, ""},
		{"list and repeat", []string{"--hostfile", repeats},
			[]string{"0 node001", "1 node001", "2 node001", "3 node002", "4 node002", "5 node003"}, ""},
	})
}

// TestHostRangeBound: a range that expands past hostrange.MaxHosts, or
// ranges that do so together, stop mpirun with one line and exit 2, from
// -H and from a hostfile (naming its line), before any node is reached.
func TestHostRangeBound(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	hostfile := writeHostfile(t, "node001\nnode[1-999999] slots=2\n")
	cases := []struct {
		name string
		args []string
		line string
	}{
		{"-H", []string{"-H", "node[1-999999]"},
			`^mpirun: host list entry "node\[1-999999\]": .*range "1-999999" expands to more than 262144 hosts \(see mpirun --help\)$`},
		{"-H in all", []string{"-H", "a[1-200000],b[1-200000]"},
			`^mpirun: host list entry "b\[1-200000\]": more than 262144 hosts in all \(see mpirun --help\)$`},
		{"hostfile", []string{"--hostfile", hostfile},
			`^mpirun: ` + regexp.QuoteMeta(hostfile) + `:2: "node\[1-999999\]": range "1-999999" expands to more than 262144 hosts \(see mpirun --help\)$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(tc.args, "true")...)
			if res.status != statusUsage {
				t.Errorf("exit %d, want %d", res.status, statusUsage)
			}
			checkOneLine(t, res.stderr, tc.line)
			if n := c.Sessions(); n != 0 {
				t.Errorf("%d ssh sessions before the error", n)
			}
		})
	}
}

func writeHostfile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
