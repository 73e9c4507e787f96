package protocol

import (
	"reflect"
	"testing"

	"prsh/modex/collective"
	"prsh/spawn"
)

// node001 of a chain mpirun → node001 → node002, with one rank each on
// node001 and node002.
func stagingOrted(t *testing.T, stage []StagedFile) *Machine {
	t.Helper()
	m, err := New(Config{
		ID: 1, Node: "node001", Addr: "tcp://127.0.0.1:2",
		Job: JobSpec{
			Daemons: 3, SpawnDegree: 1, Routed: "radix", Hosts: []string{"head", "node001", "node002"},
			Stage: stage,
		},
		Parent: 0, ParentLink: 1, Nodes: []spawn.Node{{ID: 2, Host: "node002"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Step(SpawnStarted{ID: 2})
	return m
}

func actionsOf[A Action](acts []Action) []A {
	var out []A
	for _, a := range acts {
		if a, ok := a.(A); ok {
			out = append(out, a)
		}
	}
	return out
}

var stagedProg = []StagedFile{{Source: "/home/u/prog", Name: "0/prog", Arg: "./prog", Size: 10, Mode: 0o755}}

var chainLaunch = Launch{Argv: []string{"./prog"}, RankNode: []int{1, 2}, RanksByNode: true}

// With files to stage, a child that connects gets them right after its
// Welcome; without, it gets none.
func TestStageGoesToEachChildAfterItsWelcome(t *testing.T) {
	for _, stage := range [][]StagedFile{stagedProg, nil} {
		m := stagingOrted(t, stage)
		acts := m.Step(LinkUp{Link: 2, Peer: 2})
		welcome, stageTo := -1, -1
		for i, a := range acts {
			switch a := a.(type) {
			case Send:
				if _, ok := a.Msg.(Welcome); ok {
					welcome = i
				}
			case StageTo:
				if a != (StageTo{Child: 2, Link: 2}) {
					t.Fatalf("StageTo %+v, want child 2 on link 2", a)
				}
				stageTo = i
			}
		}
		switch {
		case welcome < 0:
			t.Fatalf("no Welcome in %v", acts)
		case stage == nil && stageTo >= 0:
			t.Fatalf("StageTo without files to stage: %v", acts)
		case stage != nil && stageTo < welcome:
			t.Fatalf("StageTo missing or before the Welcome: %v", acts)
		}
	}
}

// The ranks wait for the node's copy: the Launch is passed on at once,
// the ranks start only on Staged, and a child's fence part that comes
// in between waits as it would for the Launch.
func TestRanksWaitForTheStagedCopy(t *testing.T) {
	m := stagingOrted(t, stagedProg)
	m.Step(LinkUp{Link: 2, Peer: 2})
	acts := m.Step(Received{Link: 1, Msg: chainLaunch})
	if len(actionsOf[StartRanks](acts)) != 0 {
		t.Fatalf("ranks started before the staged files were in: %v", acts)
	}
	if sends := actionsOf[Send](acts); len(sends) != 1 || sends[0].Link != 2 {
		t.Fatalf("the Launch was not passed on to node002 at once: %v", acts)
	}
	if acts := m.Step(Received{Link: 2, Msg: CollectiveUp{ID: collective.ID{Op: collective.Fence, Seq: 1}}}); len(acts) != 0 {
		t.Fatalf("a child's fence part went on before the local ranks started: %v", acts)
	}
	acts = m.Step(Staged{})
	starts := actionsOf[StartRanks](acts)
	if len(starts) != 1 || !reflect.DeepEqual(starts[0].Ranks, []int{0}) {
		t.Fatalf("Staged did not start rank 0: %v", acts)
	}
	if len(actionsOf[Send](acts)) != 0 {
		t.Fatalf("the fence went up before the local rank entered it: %v", acts)
	}
}

// A copy that cannot be made is the node's failure, sent up; no rank
// starts.
func TestStagingFailureNamesTheNode(t *testing.T) {
	m := stagingOrted(t, stagedProg)
	m.Step(Received{Link: 1, Msg: chainLaunch})
	acts := m.Step(Staged{Err: "--preload-binary: no space left on device"})
	want := Send{Link: 1, Msg: Failure{Msg: "node001: --preload-binary: no space left on device", Status: 255}}
	if !reflect.DeepEqual(acts, []Action{want}) {
		t.Fatalf("got %v, want %v", acts, want)
	}
}

// A daemon that cannot go on (its listener stopped accepting) is the
// node's failure, sent up.
func TestAcceptFailureNamesTheNode(t *testing.T) {
	m := stagingOrted(t, nil)
	acts := m.Step(CannotContinue{Err: "cannot accept connections from other daemons: accept4: too many open files"})
	want := Send{Link: 1, Msg: Failure{Msg: "node001: cannot accept connections from other daemons: accept4: too many open files", Status: 255}}
	if !reflect.DeepEqual(acts, []Action{want}) {
		t.Fatalf("got %v, want %v", acts, want)
	}
}

// mpirun stages nothing for itself: its ranks run the originals at once.
func TestMpirunRanksNeedNoStaging(t *testing.T) {
	m, err := New(Config{
		ID: 0, Node: "head", Addr: "tcp://127.0.0.1:1", Parent: -1,
		Job:   JobSpec{Daemons: 2, SpawnDegree: 1, Routed: "radix", Hosts: []string{"head", "node001"}, Stage: stagedProg},
		App:   Launch{Argv: []string{"./prog"}, RankNode: []int{0, 1}},
		Nodes: []spawn.Node{{ID: 1, Host: "node001"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if starts := actionsOf[StartRanks](m.Start()); len(starts) != 1 || !reflect.DeepEqual(starts[0].Ranks, []int{0}) {
		t.Fatalf("mpirun did not start its rank at once: %v", starts)
	}
}
