package purity

import (
	"slices"
	"testing"
)

func TestViolations(t *testing.T) {
	const golist = "fmt\ttrue\terrors os sync\t/go/src/fmt\tprint.go\n" +
		"prsh/a\tfalse\tfmt prsh/b\t\n" +
		"prsh/b\tfalse\tprsh/c time\t\n" +
		"prsh/c\tfalse\tos/exec strings\t\n" +
		"strings\ttrue\tsync\t\n" +
		"prsh/d\tfalse\tmath\t\n" +
		"prsh/e\tfalse\tmath/rand/v2 prsh/f\t\n" +
		"prsh/f\tfalse\tmath/rand\ttestdata/spawner\tspawner.go\n"
	tests := []struct {
		pkg  string
		want []string
	}{
		{"prsh/a", []string{"prsh/a → prsh/b imports time", "prsh/a → prsh/b → prsh/c imports os/exec"}},
		{"prsh/c", []string{"prsh/c imports os/exec"}},
		{"prsh/d", nil},
		{"prsh/e", []string{
			"prsh/e imports math/rand/v2",
			"prsh/e → prsh/f imports math/rand",
			"prsh/e → prsh/f: spawner.go:7: go statement",
		}},
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
	for _, golist := range []string{
		"fmt\ttrue\tos\t\n",                       // prsh/a missing
		"prsh/a\tfalse\tfmt\n",                    // too few fields
		"prsh/a\tfalse\tfmt\ttestdata\tnone.go\n", // file missing
	} {
		if got, err := Violations(golist, "prsh/a"); err == nil {
			t.Errorf("Violations(%q) = %q, want an error", golist, got)
		}
	}
}

func TestGoStatements(t *testing.T) {
	const src = `package p

func f() {
	go f()
	defer func() {
		go func() {}()
	}()
	var ch chan int
	go func() { ch <- 1 }()
}
`
	got, err := GoStatements("p.go", src)
	if want := []int{4, 6, 9}; err != nil || !slices.Equal(got, want) {
		t.Errorf("GoStatements = %v, %v; want %v", got, err, want)
	}
	if got, err := GoStatements("p.go", "package p\nfunc f() { f() }\n"); err != nil || got != nil {
		t.Errorf("GoStatements without go = %v, %v; want none", got, err)
	}
	if _, err := GoStatements("p.go", "package p\nfunc f() { go }\n"); err == nil {
		t.Error("GoStatements on bad source: no error")
	}
}

func TestIsForbidden(t *testing.T) {
	for path, want := range map[string]bool{
		"net": true, "net/http": true, "os": true, "os/exec": true, "sync": true,
		"sync/atomic": true, "time": true, "syscall": true,
		"math/rand": true, "math/rand/v2": true,
		"fmt": false, "strings": false, "network": false, "osutil": false, "timex": false,
		"math": false, "math/big": false, "math/bits": false, "math/randx": false,
		"prsh/topo": false,
	} {
		if got := IsForbidden(path); got != want {
			t.Errorf("IsForbidden(%q) = %v, want %v", path, got, want)
		}
	}
}
