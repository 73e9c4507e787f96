package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSrunArgv: one step of one task on the node, sharing the
// allocation's CPUs, without Slurm's PMI or binding, srun's stdin to the
// task; the orted's argv follows as it is (srun execs it: no quoting).
func TestSrunArgv(t *testing.T) {
	argv := []string{"/opt/prsh/orted", "--node", "a b"}
	options := []string{"--overlap", "--mpi=none", "--cpu-bind=none", "--nodes=1", "--ntasks=1",
		"--ntasks-per-node=1", "--nodelist=node7", "--input=0", "--job-name=orted", "--quiet"}
	for _, tc := range []struct {
		srun Srun
		want []string
	}{
		{Srun{JobID: "42"}, append(append([]string{"srun", "--jobid=42"}, options...), argv...)},
		{Srun{Path: "/usr/bin/srun"}, append(append([]string{"/usr/bin/srun"}, options...), argv...)},
	} {
		if got := tc.srun.Argv("node7", argv); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v:\n got %q\nwant %q", tc.srun, got, tc.want)
		}
	}
}

// fakeSrun writes an srun that drops its options and runs the rest, as
// the real one does on the node.
func fakeSrun(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "srun")
	script := "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nexec \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSrunStdinAndLifeline: the payload, then the lifeline, reach the
// command through srun, and its exit status comes back.
func TestSrunStdinAndLifeline(t *testing.T) {
	s := &Srun{JobID: "1", Path: fakeSrun(t)}
	p, err := s.Start(testCtx(t), "node1", []string{"sh", "-c", `read s; echo "got $s" >&2; exit 3`}, []byte("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wantExit(t, waitFor(t, p), 3, "got hello")
	checkLifeline(t, s, "node1")
	checkKill(t, s, "node1")
}

// TestSrunMissing: an srun that cannot be run fails the start.
func TestSrunMissing(t *testing.T) {
	s := &Srun{Path: filepath.Join(t.TempDir(), "srun")}
	if p, err := s.Start(testCtx(t), "node1", []string{"true"}, nil); err == nil {
		p.Close()
		t.Fatal("Start succeeded without srun")
	}
}

// TestSrunFailureLine: srun's and slurmstepd's lines about a daemon that
// could not start read as one line, without what the caller says anyway.
func TestSrunFailureLine(t *testing.T) {
	s := &Srun{Path: fakeSrun(t)}
	stderr := `echo "srun: cluster configuration lacks support for cpu binding" >&2; ` +
		`echo "slurmstepd-node2: error: execve(): /x/orted: No such file or directory" >&2; ` +
		`echo "srun: error: node2: task 0: Exited with exit code 2" >&2; exit 2`
	p, err := s.Start(testCtx(t), "node2", []string{"sh", "-c", stderr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	xe := wantExit(t, waitFor(t, p), 2, "execve(): /x/orted: No such file or directory")
	if xe.Error() != "exit status 2: execve(): /x/orted: No such file or directory" {
		t.Errorf("Error() = %q", xe.Error())
	}
}
