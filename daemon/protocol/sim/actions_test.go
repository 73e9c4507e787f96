package sim

import (
	"fmt"
	"strings"
	"testing"

	"prsh/daemon/protocol"
)

// The simulator carries out, or knowingly passes over, every action the
// machine may ask for (protocol.Actions): none takes its unknown path.
func TestSimHandlesEveryAction(t *testing.T) {
	for _, a := range protocol.Actions {
		t.Run(fmt.Sprintf("%T", a), func(t *testing.T) {
			s := New(Options{Nodes: 2, RankMS: 10, Faults: map[int]Fault{}, RankStatus: map[int]int{},
				App: protocol.Launch{Argv: []string{"app"}, RankNode: []int{1, 2}}})
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			s.do(s.d[0], a)
			for _, e := range s.Errors {
				if strings.Contains(e, "unknown action") {
					t.Error(e)
				}
			}
		})
	}
}
