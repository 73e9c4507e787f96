package main

import (
	"testing"

	"prsh/testbed"
)

// TestRankEnvironmentFlags: -x VAR=value and -x VAR reach every rank,
// --wdir sets their working directory, and --routed-radix and --listen-ip
// still launch everywhere.
func TestRankEnvironmentFlags(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 5})
	dir := t.TempDir()
	t.Setenv("FROM_MPIRUN", "inherited")
	res := mpirun(t, c, "-x", "GREETING=hello world", "-x", "FROM_MPIRUN", "--wdir", dir,
		"--routed-radix", "2", "--listen-ip", "127.0.0.1",
		"sh", "-c", `echo "$PRSH_RANK $GREETING $FROM_MPIRUN $(pwd)"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := 0; r < 5; r++ {
		want = append(want, itoa(r)+" hello world inherited "+dir)
	}
	wantSet(t, res.stdout, want...)
}
