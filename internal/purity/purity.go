// Package purity is a test helper: it checks that a package meant to be a
// pure state machine (no sockets, no processes, no goroutines, no clocks)
// stays one, by looking at what it imports.
package purity

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// Forbidden lists the packages a pure package must not import; their
// subpackages (os/exec, net/http, sync/atomic, …) are forbidden too.
var Forbidden = []string{"net", "os", "syscall", "sync", "time"}

// IsForbidden reports whether importing path breaks purity.
func IsForbidden(path string) bool {
	for _, f := range Forbidden {
		if path == f || strings.HasPrefix(path, f+"/") {
			return true
		}
	}
	return false
}

// Check fails t if pkg imports a forbidden package, directly or through any
// non-standard package it depends on. Test files are not looked at (go list
// -deps without -test), so tests may use whatever they like.
//
// The standard library is trusted and not walked into: fmt imports os and
// sync, strings imports sync, yet fmt.Errorf and strings.Join do no I/O.
// Walking into it would forbid fmt and strings, which is not the point;
// what must not rot is our own code reaching for the network, the clock or
// a goroutine.
func Check(t testing.TB, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", pkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	violations, err := Violations(string(out), pkg)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		t.Errorf("%s is not pure: %s", pkg, v)
	}
}

// Violations parses the output of
//
//	go list -deps -f '{{.ImportPath}}\t{{.Standard}}\t{{join .Imports " "}}' pkg
//
// and lists, for every non-standard package in it, each forbidden import,
// with the chain of imports that leads to it from pkg.
func Violations(golist, pkg string) ([]string, error) {
	imports := map[string][]string{} // non-standard packages only
	for _, line := range strings.Split(golist, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			return nil, &parseError{line}
		}
		if fields[1] == "true" {
			continue
		}
		imports[fields[0]] = strings.Fields(fields[2])
	}
	if _, ok := imports[pkg]; !ok {
		return nil, &parseError{"package " + pkg + " missing from go list output"}
	}
	// Breadth-first from pkg, so that each chain reported is a shortest one.
	via := map[string]string{pkg: ""}
	queue := []string{pkg}
	var out []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range imports[p] {
			if IsForbidden(imp) {
				out = append(out, chain(via, p)+" imports "+imp)
				continue
			}
			if _, seen := via[imp]; seen {
				continue
			}
			if _, ours := imports[imp]; ours {
				via[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func chain(via map[string]string, p string) string {
	path := []string{p}
	for q := via[p]; q != ""; q = via[q] {
		path = append(path, q)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return strings.Join(path, " → ")
}

type parseError struct{ what string }

func (e *parseError) Error() string { return "purity: cannot parse go list output: " + e.what }
