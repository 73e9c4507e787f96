package protocol

import (
	"strings"
	"testing"

	"prsh/routed"
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

// binomialOrted is daemon 1 of a DVM of 4 routed binomially, every
// daemon mpirun's child: it passes each Launch on to daemon 3 (node3),
// dialling it. It knows every address and has its job 1 launched.
func binomialOrted(t *testing.T) *Machine {
	t.Helper()
	m, err := New(Config{ID: 1, Node: "node1", Parent: 0, ParentLink: 7,
		Job: JobSpec{Daemons: 4, SpawnDegree: 3, Routed: "binomial", KillGraceMS: 3000, DVM: true,
			Hosts: []string{"mpirun", "node1", "node2", "node3"}}})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Step(Received{Link: 7, Msg: Addrs{Entries: routed.EntriesOf(
		routed.Entry{ID: 0, Addr: "a0"}, routed.Entry{ID: 2, Addr: "a2"}, routed.Entry{ID: 3, Addr: "a3"})}})
	acts := m.Step(Received{Link: 7, Msg: Launch{Job: 1, RankNode: RankMap{1, 3}}})
	if dials := actionsOf[Dial](acts); len(dials) != 1 || dials[0].Peer != 3 {
		t.Fatalf("the Launch dials %+v, want daemon 3", dials)
	}
	return m
}

// TestDVMDialFailedWaitsForLost: in a DVM, an orted whose dial of a
// routing neighbour fails holds what it routes there instead of ending
// the DVM; mpirun's Lost naming the neighbour drops it and the wait, and
// later Launches and direct-modex requests go around it (the request
// answered with the loss). Without word of a loss, the wait's end fails
// the DVM as a failed dial always did.
func TestDVMDialFailedWaitsForLost(t *testing.T) {
	m := binomialOrted(t)
	acts := m.Step(DialFailed{Peer: 3, Err: "connection refused"})
	if timers := actionsOf[SetTimer](acts); len(actionsOf[Send](acts)) > 0 || len(timers) != 1 || timers[0].Timer != (Timer{LostWaitTimer, 3}) {
		t.Fatalf("a failed dial in a DVM: %+v, want only the lost-wait timer", acts)
	}
	acts = m.Step(Received{Link: 7, Msg: Lost{IDs: []int{3}}})
	if c := actionsOf[CancelTimer](acts); len(c) != 1 || c[0].Timer != (Timer{LostWaitTimer, 3}) {
		t.Errorf("Lost of the neighbour: %+v, want the lost-wait timer cancelled", acts)
	}
	acts = m.Step(Received{Link: 7, Msg: Launch{Job: 2, RankNode: RankMap{1, 2}}})
	if d := actionsOf[Dial](acts); len(d) > 0 || m.Held() != 0 {
		t.Errorf("a Launch after Lost dials %+v, holds %d", d, m.Held())
	}
	acts = m.Step(DirectModexWanted{ID: 9, Job: 1, Rank: 1})
	if a := actionsOf[ModexAnswered](acts); len(a) != 1 || a[0].Err != "the DVM lost node3" {
		t.Errorf("a direct modex for a rank of the lost daemon: %+v, want it answered with the loss", acts)
	}

	m = binomialOrted(t)
	m.Step(DialFailed{Peer: 3, Err: "connection refused"})
	got := jobActions(m.Step(TimerFired{Timer{LostWaitTimer, 3}}))
	if want := "send {Msg:node1: cannot reach the orted of node3 at a3: connection refused Status:255"; !strings.HasPrefix(got, want) {
		t.Errorf("no Lost within the wait: %q, want %q", got, want)
	}
}
