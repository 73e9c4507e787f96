package main

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"testing"

	"prsh/testbed"
)

// TestPortRange: with --port-range (or Hydra's MPIEXEC_PORT_RANGE),
// mpirun and every orted listen on ports of the range, as a firewall
// that opens only those needs; a range with no free port ends the job
// naming it.
func TestPortRange(t *testing.T) {
	probe, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lo := min(probe.Addr().(*net.TCPAddr).Port, 65535-20)
	probe.Close()
	hi := lo + 20
	c := cluster(t, testbed.Config{Nodes: 3})
	// Along a chain each orted's address is in its child's argv, which
	// -v logs.
	res := mpirun(t, c, "-v", "--spawn-degree", "1", "--port-range", fmt.Sprintf("%d-%d", lo, hi), "true")
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`--parent tcp://([0-9.]+):(\d+)`).FindAllStringSubmatch(res.stderr, -1) {
		port, _ := strconv.Atoi(m[2])
		if port < lo || port > hi {
			t.Errorf("a daemon listens at %s:%s, outside %d-%d", m[1], m[2], lo, hi)
		}
		seen[m[1]] = true
	}
	if len(seen) != 3 { // mpirun's, node001's and node002's
		t.Errorf("%d daemons' addresses logged, want 3:\n%s", len(seen), res.stderr)
	}

	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	t.Setenv("MPIEXEC_PORT_RANGE", fmt.Sprintf("%d:%d", port, port))
	res = mpirun(t, c, "--listen-ip", "127.0.0.1", "true")
	if res.status != 255 {
		t.Errorf("no free port: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, fmt.Sprintf(`^mpirun: \S+: cannot listen on "127.0.0.1": no free port in %d-%d on 127.0.0.1$`, port, port))
}
