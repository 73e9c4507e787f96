package protocol

import (
	"fmt"
	"testing"
)

// An orted that gets SIGTERM (Slurm's time limit or scancel) tells mpirun
// why in one Failure, SIGTERMs its ranks once and starts the kill grace;
// a second SIGTERM adds nothing. Outside Slurm the line names no Slurm.
func TestOrtedSIGTERM(t *testing.T) {
	for _, tc := range []struct{ srunJob, want string }{
		{"5", "node2: orted got SIGTERM from Slurm (job 5's time limit or scancel), terminating the job"},
		{"", "node2: orted got SIGTERM, terminating the job"},
	} {
		m, err := New(Config{ID: 1, Node: "node2", Parent: 0, ParentLink: 7,
			Job: JobSpec{Daemons: 2, SpawnDegree: 1, Routed: "radix", SrunJob: tc.srunJob, KillGraceMS: 3000}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range m.Step(Interrupt{Sig: SIGTERM, Name: "TERM"}) {
			switch a := a.(type) {
			case Send, SignalRanks, SetTimer:
				got = append(got, fmt.Sprintf("%+v", a))
			}
		}
		want := []string{
			fmt.Sprintf("%+v", Send{7, Failure{Msg: tc.want, Status: 143}}),
			fmt.Sprintf("%+v", SignalRanks{SIGTERM, AllJobs}),
			fmt.Sprintf("%+v", SetTimer{Timer{Kind: GraceTimer}, 3000}),
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("SrunJob %q: actions\n%s\nwant\n%s", tc.srunJob, got, want)
		}
		for _, a := range m.Step(Interrupt{Sig: SIGTERM, Name: "TERM"}) {
			if _, ok := a.(Send); ok {
				t.Errorf("second SIGTERM: %+v", a)
			}
			if _, ok := a.(SignalRanks); ok {
				t.Errorf("second SIGTERM: %+v", a)
			}
		}
	}
}

// An orted whose lifeline ends while its ranks have the SIGTERM it got
// itself (at Slurm's time limit srun and mpirun get the TERM too) lets
// them keep the rest of the kill grace, then kills what is left and
// exits; otherwise it kills them and exits at once.
func TestLifelineLostInTheGrace(t *testing.T) {
	orted := func() *Machine {
		m, err := New(Config{ID: 1, Node: "node001", Addr: "tcp://127.0.0.1:2", Parent: 0, ParentLink: 1,
			Job: JobSpec{Daemons: 2, SpawnDegree: 1, Routed: "radix", Hosts: []string{"head", "node001"}, KillGraceMS: 3000}})
		if err != nil {
			t.Fatal(err)
		}
		m.Start()
		if starts := actionsOf[StartRanks](m.Step(Received{Link: 1, Msg: Launch{Argv: []string{"./prog"}, RankNode: []int{1}, RanksByNode: true}})); len(starts) != 1 {
			t.Fatal("no rank started")
		}
		return m
	}
	kills := func(acts []Action) int {
		n := 0
		for _, s := range actionsOf[SignalRanks](acts) {
			if s.Sig == SIGKILL {
				n++
			}
		}
		return n
	}

	m := orted()
	m.Step(Interrupt{Sig: SIGTERM, Name: "TERM"})
	if acts := m.Step(Orphaned{Why: "its parent's session ended"}); kills(acts) != 0 || len(actionsOf[Exit](acts)) != 0 {
		t.Fatalf("lifeline lost in the grace: %v, want the grace to run on", acts)
	}
	if acts := m.Step(TimerFired{Timer{Kind: GraceTimer}}); kills(acts) != 1 || len(actionsOf[Exit](acts)) != 1 {
		t.Fatalf("grace over after the lifeline: %v, want SIGKILL and Exit", acts)
	}

	m = orted()
	if acts := m.Step(Orphaned{Why: "its parent's session ended"}); kills(acts) != 1 || len(actionsOf[Exit](acts)) != 1 {
		t.Fatalf("lifeline lost while running: %v, want SIGKILL and Exit at once", acts)
	}

	// In the grace of mpirun's teardown, mpirun gone means now.
	m = orted()
	m.Step(Received{Link: 1, Msg: Teardown{Kill: true}})
	if acts := m.Step(Orphaned{Why: "its parent's session ended"}); kills(acts) != 1 || len(actionsOf[Exit](acts)) != 1 {
		t.Fatalf("lifeline lost in mpirun's teardown: %v, want SIGKILL and Exit at once", acts)
	}
}

// mpirun's first signal, when it is SIGTERM and the job is already ending
// (an orted's report of Slurm's TERM came first), leaves the ranks their
// grace; a second signal, or a first SIGINT then, kills everything now.
func TestTERMOfAnEndingJob(t *testing.T) {
	ending := func() *Machine {
		m, err := New(Config{ID: 0, Node: "head", Addr: "tcp://127.0.0.1:1", Parent: -1,
			Job:   JobSpec{Daemons: 1, Routed: "radix", Hosts: []string{"head"}, KillGraceMS: 3000},
			App:   Launch{Argv: []string{"./prog"}, RankNode: []int{0}},
			Nodes: nil})
		if err != nil {
			t.Fatal(err)
		}
		m.Start()
		m.Step(Aborted{Rank: 0, Msg: "the rank aborted", Status: 3})
		return m
	}
	killedNow := func(acts []Action) bool { return len(actionsOf[Exit](acts)) == 1 }

	m := ending()
	if acts := m.Step(Interrupt{Sig: SIGTERM, Name: "TERM"}); killedNow(acts) {
		t.Fatalf("first SIGTERM of an ending job: %v, want its grace kept", acts)
	}
	if acts := m.Step(Interrupt{Sig: SIGTERM, Name: "TERM"}); !killedNow(acts) {
		t.Fatalf("second SIGTERM: %v, want everything killed now", acts)
	}
	m = ending()
	if acts := m.Step(Interrupt{Sig: SIGINT, Name: "INT"}); !killedNow(acts) {
		t.Fatalf("Ctrl-C of an ending job: %v, want everything killed now", acts)
	}
}
