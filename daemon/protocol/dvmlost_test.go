package protocol

import (
	"strings"
	"testing"

	"prsh/spawn"
)

// TestDVMChildLost: an orted of a DVM whose child's orted is killed
// reports the loss up naming the child (Failure.Lost), ends nothing of
// its own, and routes no later Launch to the child: the job's ranks here
// start, and nothing is sent or dialled toward the lost daemon.
func TestDVMChildLost(t *testing.T) {
	m, err := New(Config{ID: 1, Node: "node1", Parent: 0, ParentLink: 7,
		Nodes: []spawn.Node{{ID: 2, Host: "node2"}},
		Job:   JobSpec{Daemons: 3, SpawnDegree: 1, Routed: "radix", KillGraceMS: 3000, DVM: true}})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Step(SpawnStarted{ID: 2})
	m.Step(LinkUp{Link: 8, Peer: 2})
	m.Step(LinkDown{Link: 8, Err: "EOF"})
	got := jobActions(m.Step(DaemonExited{ID: 2, Err: "signal KILL"}))
	if want := "send {Msg:node2: orted exited unexpectedly: signal KILL Status:255 Job:0 Lost:2}"; !strings.HasPrefix(got, want) {
		t.Errorf("the child's loss: %q, want %q", got, want)
	}
	if m.Ending() {
		t.Error("the orted ends with its child's loss")
	}
	acts := m.Step(Received{Link: 7, Msg: Launch{Job: 1, RankNode: RankMap{1, 2}}})
	for _, a := range acts {
		switch a := a.(type) {
		case Dial:
			t.Errorf("a Launch after the loss dials daemon %d", a.Peer)
		case Send:
			if a.Link != 7 {
				t.Errorf("a Launch after the loss sends %+v on link %d", a.Msg, a.Link)
			}
		}
	}
	if got := jobActions(acts); !strings.HasPrefix(got, "start [0] of job 1") {
		t.Errorf("a Launch after the loss: %q, want its rank 0 started", got)
	}
	if m.Held() != 0 {
		t.Errorf("%d messages held for the lost daemon", m.Held())
	}
}
