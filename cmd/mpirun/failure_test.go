package main

import (
	"os"
	"path/filepath"
	"testing"

	"prsh/testbed"
)

// TestUnreachableNodes: each broken node ends the job quickly with one line
// naming the node and the cause, status 255, and nothing left running.
func TestUnreachableNodes(t *testing.T) {
	cases := []struct {
		name  string
		fault testbed.Fault
		line  string
	}{
		{"refuses ssh", testbed.Fault{Refuse: true}, `^mpirun: node005: ssh: .*connection refused`},
		{"hangs in the ssh handshake", testbed.Fault{Hang: true}, `^mpirun: node005: ssh: .*(timed out|timeout)`},
		{"wrong host key", testbed.Fault{WrongHostKey: true}, `^mpirun: node005: ssh: host key mismatch .*SHA256:`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, testbed.Config{Nodes: 7, Faults: map[string]testbed.Fault{"node005": tc.fault}})
			for _, degree := range []string{"2", "32"} {
				res := mpirun(t, c, "--spawn-degree", degree, "--ssh-connect-timeout", "2s", "sleep", "60")
				if res.status != 255 {
					t.Errorf("δ=%s: exit %d, want 255; stderr:\n%s", degree, res.status, res.stderr)
				}
				checkOneLine(t, res.stderr, tc.line)
			}
		})
	}
}

func TestHostDoesNotResolve(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "-H", "node001,no-such-host.invalid", "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: no-such-host.invalid: .*no such host`)
}

func TestOrtedMissing(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	res := mpirun(t, c, "--orted", "/nonexistent/orted", "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node00[1-3]: orted exited before calling back: exit status 127: .*/nonexistent/orted.*not found`)
}

// TestOrtedNeverCallsBack: a daemon that starts but never connects is named
// after --callback-timeout, and its session is closed.
func TestOrtedNeverCallsBack(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	fake := filepath.Join(t.TempDir(), "orted")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec cat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := mpirun(t, c, "--orted", fake, "--callback-timeout", "1s", "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node00[12]: orted started but did not call back within 1s`)
}
