package agent

import (
	"reflect"
	"testing"
)

// TestLabelled: srun --label pads the task id to the widest one.
func TestLabelled(t *testing.T) {
	for _, tc := range []struct {
		line string
		task int
		text string
		ok   bool
	}{
		{"3: orted: alive on node4", 3, "orted: alive on node4", true},
		{" 7: slurmstepd-node8: error: execve(): /x: No such file or directory", 7, "slurmstepd-node8: error: execve(): /x: No such file or directory", true},
		{"12: ", 12, "", true},
		{"srun: error: node3: task 2: Exited with exit code 2", 0, "", false},
		{"-1: x", 0, "", false},
		{"no label", 0, "", false},
	} {
		task, text, ok := labelled(tc.line)
		if task != tc.task || text != tc.text || ok != tc.ok {
			t.Errorf("labelled(%q) = %d, %q, %v; want %d, %q, %v", tc.line, task, text, ok, tc.task, tc.text, tc.ok)
		}
	}
	if host, ok := aliveHost("orted: alive on node4"); host != "node4" || !ok {
		t.Errorf("aliveHost = %q, %v", host, ok)
	}
	if _, ok := aliveHost("orted: alive"); ok {
		t.Error("aliveHost found a host in the plain alive line")
	}
}

// TestParseTaskExit: srun's report of a failed task becomes its node,
// its tasks and an ExitError as the other agents give it.
func TestParseTaskExit(t *testing.T) {
	for _, tc := range []struct {
		line string
		want taskExit
	}{
		{"srun: error: node3: task 2: Exited with exit code 2", taskExit{"node3", []int{2}, &ExitError{Status: 2}}},
		{"srun: error: node5: task 0: Killed", taskExit{"node5", []int{0}, &ExitError{Status: 137, Signal: "KILL"}}},
		{"srun: error: n1: tasks 1-2,4: Segmentation fault (core dumped)", taskExit{"n1", []int{1, 2, 4}, &ExitError{Status: 139, Signal: "SEGV"}}},
		{"srun: error: n1: task 3: Strange end", taskExit{"n1", []int{3}, &ExitError{Status: -1, Stderr: "Strange end"}}},
	} {
		got, ok := parseTaskExit(tc.line)
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseTaskExit(%q) = %+v %v, %v; want %+v %v", tc.line, got, got.status, ok, tc.want, tc.want.status)
		}
	}
	for _, line := range []string{"srun: error: Unable to create step for job 5: Requested nodes are busy", "3: srun: error: x: task 1: Killed", "srun: error: n1: task 2-1: Killed"} {
		if x, ok := parseTaskExit(line); ok {
			t.Errorf("parseTaskExit(%q) = %+v, want no task exit", line, x)
		}
	}
}

// TestStepStderr: a task's lines read as one, without srun's note on
// binding and slurmstepd's prefix.
func TestStepStderr(t *testing.T) {
	got := stepStderr([]string{noCPUBinding, "slurmstepd-node3: error: execve(): /tmp/prsh/orted: No such file or directory", "", "second"})
	if want := "execve(): /tmp/prsh/orted: No such file or directory; second"; got != want {
		t.Errorf("stepStderr = %q, want %q", got, want)
	}
}
