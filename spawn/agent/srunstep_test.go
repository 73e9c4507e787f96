package agent

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestSrunStepArgv: one step of one task per node, every count explicit
// (salloc exports its own), the nodes as a range; a failed task ends
// only itself; stdin to every task; labelled output.
func TestSrunStepArgv(t *testing.T) {
	s := SrunStep{JobID: "42"}
	got := s.Argv([]string{"node2", "node3", "node4", "node7"}, []string{"/opt/prsh/orted", "--slurm-step"})
	want := []string{"srun", "--jobid=42", "--overlap", "--mpi=none", "--cpu-bind=none", "--nodes=4", "--ntasks=4",
		"--ntasks-per-node=1", "--nodelist=node[2-4],node7", "--kill-on-bad-exit=0", "--wait=0", "--input=all",
		"--label", "--job-name=orted", "--quiet", "/opt/prsh/orted", "--slurm-step"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// startFakeStep starts a fake step of two tasks on h1 and h2, whose
// lines the command srun runs (fakeSrun) writes: the tasks' alive lines,
// task 0 on h2, then what script adds.
func startFakeStep(t *testing.T, script string) []Process {
	t.Helper()
	s := &SrunStep{Path: fakeSrun(t)}
	alive := `echo "0: orted: alive on h2"; echo "1: orted: alive on h1"; `
	ps, err := s.StartGroup(testCtx(t), []string{"h1", "h2"}, []string{"sh", "-c", alive + script}, []byte("secret\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("%d processes for 2 hosts", len(ps))
	}
	return ps
}

// TestSrunStepOneTaskFails: the failed task's host alone gets its exit
// status and its stderr, while the other runs on; srun's status at the
// end is that failure's, not the other host's.
func TestSrunStepOneTaskFails(t *testing.T) {
	ps := startFakeStep(t, `echo "0: slurmstepd-h2: error: execve(): /x/orted: No such file or directory" >&2
echo "srun: error: h2: task 0: Exited with exit code 2" >&2
cat >/dev/null; exit 2`)
	for i, p := range ps {
		<-p.Alive()
		t.Logf("host %d alive", i+1)
	}
	xe := wantExit(t, waitFor(t, ps[1]), 2, "")
	if xe.Error() != "exit status 2: execve(): /x/orted: No such file or directory" {
		t.Errorf("h2: %q", xe.Error())
	}
	if err := closeAndWait(t, ps[0]); err != nil {
		t.Errorf("h1 after Close: %v, want exit 0 (srun's status is h2's)", err)
	}
}

// TestSrunStepLifeline: the payload reaches the tasks; closing every
// host's Process closes srun's stdin, and srun's own end ends them.
func TestSrunStepLifeline(t *testing.T) {
	dir := t.TempDir()
	ps := startFakeStep(t, `read s; echo "$s" > `+dir+`/got; cat >/dev/null; echo eof > `+dir+`/eof`)
	if got := waitFile(t, filepath.Join(dir, "got")); got != "secret\n" {
		t.Errorf("payload = %q", got)
	}
	assertRunning(t, ps[0], filepath.Join(dir, "eof"))
	done := make(chan error, 1)
	go func() { done <- closeAndWait(t, ps[0]) }()
	assertRunning(t, ps[1], filepath.Join(dir, "eof")) // one Close does not end a step
	if err := closeAndWait(t, ps[1]); err != nil {
		t.Errorf("h2: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("h1: %v", err)
	}
	waitFile(t, filepath.Join(dir, "eof"))
}

// TestSrunStepFails: srun's own failure, with no task's report, is every
// host's.
func TestSrunStepFails(t *testing.T) {
	s := &SrunStep{Path: fakeSrun(t)}
	script := `echo "srun: error: Unable to create step for job 5: Requested node configuration is not available" >&2; exit 1`
	ps, err := s.StartGroup(testCtx(t), []string{"h1", "h2"}, []string{"sh", "-c", script}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		wantExit(t, waitFor(t, p), 1, "srun: error: Unable to create step for job 5: Requested node configuration is not available")
	}
}

// TestSrunStepKilled: srun killed by a signal says so for every host.
// (Killed once it has read the payload: killed before, its start fails.)
func TestSrunStepKilled(t *testing.T) {
	ps := startFakeStep(t, `read secret; kill -KILL $$`)
	for _, p := range ps {
		xe := wantExit(t, waitFor(t, p), 128+9, "")
		if xe.Error() != "signal KILL: it went to srun, which runs the daemons' job step" {
			t.Errorf("Wait: %q", xe.Error())
		}
	}
}

// TestSrunStepMissing: without srun no host starts.
func TestSrunStepMissing(t *testing.T) {
	s := &SrunStep{Path: filepath.Join(t.TempDir(), "srun")}
	if _, err := s.StartGroup(testCtx(t), []string{"h1", "h2"}, []string{"true"}, nil); err == nil {
		t.Fatal("StartGroup succeeded without srun")
	}
}

// TestSrunStepKill: a step whose task is stopped (a hung daemon) ends
// once every host's Process is closed, one of them by Kill: srun is
// killed at once, which ends the step.
func TestSrunStepKill(t *testing.T) {
	ps := startFakeStep(t, `kill -STOP $$`)
	done := make(chan error, 1)
	go func() { done <- ps[0].Close() }()
	if err := ps[1].Kill(); err != nil {
		t.Errorf("Kill: %v", err)
	}
	<-done
	for _, p := range ps {
		if xe := wantExit(t, waitFor(t, p), 128+9, ""); xe.Signal != "KILL" {
			t.Errorf("Wait: %v, want the signal KILL", xe)
		}
	}
}

// TestSrunStepCancelled: slurmstepd's line that Slurm cancelled the step
// (the time limit, scancel) marks every task's end, those that exit 0
// too; a step that was not cancelled marks none.
func TestSrunStepCancelled(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"slurmstepd: error: *** STEP 12.0 ON h1 CANCELLED AT 2026-11-27T02:40:00 DUE TO TIME LIMIT ***", true},
		{"slurmstepd-h2: error: *** JOB 12 ON h2 CANCELLED AT 2026-11-27T02:40:00 ***", true},
		{"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", false},
	} {
		ps := startFakeStep(t, `echo "`+tc.line+`" >&2; cat >/dev/null`)
		for _, p := range ps {
			go p.Close()
		}
		for i, p := range ps {
			if err := waitFor(t, p); err != nil {
				t.Errorf("%q: h%d: %v, want exit 0", tc.line, i+1, err)
			}
			if got := p.(Cancellable).Cancelled(); got != tc.want {
				t.Errorf("%q: h%d cancelled %v, want %v", tc.line, i+1, got, tc.want)
			}
		}
	}
}
