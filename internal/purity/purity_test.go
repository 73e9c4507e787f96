package purity

import (
	"slices"
	"testing"
)

func TestViolations(t *testing.T) {
	const golist = "fmt\ttrue\terrors os sync\n" +
		"prsh/a\tfalse\tfmt prsh/b\n" +
		"prsh/b\tfalse\tprsh/c time\n" +
		"prsh/c\tfalse\tos/exec strings\n" +
		"strings\ttrue\tsync\n" +
		"prsh/d\tfalse\t\n"
	tests := []struct {
		pkg  string
		want []string
	}{
		{"prsh/a", []string{"prsh/a → prsh/b imports time", "prsh/a → prsh/b → prsh/c imports os/exec"}},
		{"prsh/c", []string{"prsh/c imports os/exec"}},
		{"prsh/d", nil},
	}
	for _, tt := range tests {
		got, err := Violations(golist, tt.pkg)
		if err != nil {
			t.Fatalf("Violations(%s): %v", tt.pkg, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Violations(%s) = %q, want %q", tt.pkg, got, tt.want)
		}
	}
	if got, err := Violations("fmt\ttrue\tos\n", "prsh/a"); err == nil {
		t.Errorf("Violations with the package missing = %q, want an error", got)
	}
}

func TestIsForbidden(t *testing.T) {
	for path, want := range map[string]bool{
		"net": true, "net/http": true, "os": true, "os/exec": true, "sync": true,
		"sync/atomic": true, "time": true, "syscall": true,
		"fmt": false, "strings": false, "network": false, "osutil": false, "timex": false,
		"prsh/topo": false,
	} {
		if got := IsForbidden(path); got != want {
			t.Errorf("IsForbidden(%q) = %v, want %v", path, got, want)
		}
	}
}
