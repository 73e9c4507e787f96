package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// dvmLeaf is the orted of node1 in a DVM of two daemons, its parent
// (mpirun) on link 7, started.
func dvmLeaf(t *testing.T) *Machine {
	t.Helper()
	m, err := New(Config{ID: 1, Node: "node1", Parent: 0, ParentLink: 7,
		Job: JobSpec{Daemons: 2, SpawnDegree: 1, Routed: "radix", KillGraceMS: 3000, DVM: true}})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	return m
}

// fromParent steps a message from the parent and words what it did
// about the job: the ranks started or signalled, what went up, what
// was released.
func fromParent(m *Machine, msg Message) string {
	return jobActions(m.Step(Received{Link: 7, Msg: msg}))
}

func jobActions(acts []Action) string {
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case StartRanks:
			out = append(out, fmt.Sprintf("start %v of job %d", a.Ranks, a.App.Job))
		case SignalRanks:
			out = append(out, fmt.Sprintf("signal %d of job %d", a.Sig, a.Job))
		case ReleaseJob:
			out = append(out, fmt.Sprintf("release %d", a.Job))
		case Send:
			out = append(out, fmt.Sprintf("send %+v", a.Msg))
		}
	}
	return strings.Join(out, "; ")
}

// TestDVMJobsOverlap: a Launch of the next job that comes before the
// current job's JobEnd starts its ranks at once, beside the first job's;
// each job's ranks, milestones, signals and release are its own, and a
// repeat or a stale Launch starts nothing.
func TestDVMJobsOverlap(t *testing.T) {
	m := dvmLeaf(t)
	steps := []struct {
		ev   Event
		want string
	}{
		{Received{7, Launch{Job: 1, RankNode: RankMap{1}}}, "start [0] of job 1; send {Kind:2 Job:1}"},
		{Received{7, Launch{Job: 2, RankNode: RankMap{1, 1}}}, "start [0 1] of job 2; send {Kind:2 Job:2}"},
		{RankExited{Job: 2, Rank: 1, Status: 3, How: "exited with status 3"}, "send {Msg:node1: rank 1 exited with status 3 Status:3 Job:2 Lost:0}"},
		{RankExited{Job: 1, Rank: 0, How: "exited with status 0"}, "send {Job:1}; send {Kind:3 Job:1}"}, // RanksLeft, Exited
		{Received{7, JobKill{Job: 2}}, "signal 15 of job 2"},
		{Received{7, JobEnd{Job: 1}}, "signal 9 of job 1; release 1"},
		{RankExited{Job: 2, Rank: 0, Status: 143, How: "was killed by signal 15"}, "send {Kind:3 Job:2}"},
		{Received{7, Launch{Job: 2, RankNode: RankMap{1, 1}}}, ""}, // a repeat
		{Received{7, Launch{Job: 1, RankNode: RankMap{1}}}, ""},    // a stale one
		{Received{7, JobEnd{Job: 2}}, "signal 9 of job 2; release 2"},
	}
	for i, s := range steps {
		if got := jobActions(m.Step(s.ev)); got != s.want {
			t.Errorf("step %d (%T): %q, want %q", i, s.ev, got, s.want)
		}
	}
}

// TestDVMJobKilled: a JobKill ends the job's ranks with the kill grace and
// no more failures go up for it; one that comes before its job's Launch
// makes that Launch start nothing; the job after is whole.
func TestDVMJobKilled(t *testing.T) {
	m := dvmLeaf(t)
	fromParent(m, Launch{Job: 1, RankNode: RankMap{1}})
	if got, want := fromParent(m, JobKill{Job: 1}), "signal 15 of job 1"; got != want {
		t.Errorf("JobKill: %q, want %q", got, want)
	}
	if got, want := jobActions(m.Step(RankExited{Job: 1, Rank: 0, Status: 143, How: "was killed by signal 15"})), "send {Kind:3 Job:1}"; got != want {
		t.Errorf("a killed rank's exit: %q, want %q (no Failure)", got, want)
	}
	fromParent(m, JobEnd{Job: 1})
	fromParent(m, JobKill{Job: 2})
	if got, want := fromParent(m, Launch{Job: 2, RankNode: RankMap{1}}), "start [] of job 2; send {Kind:2 Job:2}; send {Kind:3 Job:2}"; got != want {
		t.Errorf("a Launch after its JobKill: %q, want %q", got, want)
	}
	fromParent(m, JobEnd{Job: 2})
	fromParent(m, Launch{Job: 3, RankNode: RankMap{1}})
	got := jobActions(m.Step(RankExited{Job: 3, Rank: 0, Status: 3, How: "exited with status 3"}))
	if want := `send {Msg:node1: rank 0 exited with status 3 Status:3 Job:3 Lost:0}; send {Kind:3 Job:3}`; got != want {
		t.Errorf("job 3's failing rank: %q, want %q", got, want)
	}
}
