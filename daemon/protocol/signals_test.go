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
			fmt.Sprintf("%+v", SignalRanks{SIGTERM}),
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
