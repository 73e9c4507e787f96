package mpirun

import (
	"strings"
	"testing"

	"prsh/job/compat"
)

// TestHelpNamesEveryFlag: the hand-written help mentions every flag by
// its name.
func TestHelpNamesEveryFlag(t *testing.T) {
	for _, f := range flags() {
		name := f.Names()[0]
		dashes := "--"
		if len(name) == 1 {
			dashes = "-"
		}
		if !strings.Contains(helpText, dashes+name) && !strings.Contains(helpText, "-"+name+" ") {
			t.Errorf("--help does not mention %s%s", dashes, name)
		}
	}
}

// TestJoinPairs: two-valued flags among mpirun's options become one
// value; the command's own arguments are left alone.
func TestJoinPairs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"mpirun -genv A b ./a -genv X Y", "mpirun -genv=A=b ./a -genv X Y"},
		{"mpirun -np 2 --mca btl tcp -genv A b ./a", "mpirun -np 2 --mca=btl=tcp -genv=A=b ./a"},
		{"mpirun -gmca btl tcp,self ./a", "mpirun -gmca=btl=tcp,self ./a"},
		{"mpirun --oversubscribe -genv A B ./a", "mpirun --oversubscribe -genv=A=B ./a"},
		{"mpirun -x A -genv=A=B ./a", "mpirun -x A -genv=A=B ./a"},
		{"mpirun -genv A", "mpirun -genv A"},
	} {
		got := strings.Join(joinPairs(strings.Fields(tc.in), flags()), " ")
		if got != tc.want {
			t.Errorf("joinPairs(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestPeerFlagsAreMissing: a hint for a peer's flag that prsh lacks is
// only reached when the flag is unknown, so one for a flag prsh has
// since gained is stale (--preload-binary's said "not yet").
func TestPeerFlagsAreMissing(t *testing.T) {
	for _, f := range flags() {
		for _, name := range f.Names() {
			if hint, ok := compat.PeerFlags[name]; ok {
				t.Errorf("%q is a flag, yet compat.PeerFlags says: %s", name, hint)
			}
		}
	}
}
