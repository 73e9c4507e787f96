// Package purity is a test helper: it checks that a package meant to be a
// pure state machine stays one. Pure packages are deterministic state
// machines that a simulator drives on a virtual clock, so they must not use
// sockets, processes, goroutines, clocks or randomness; this is checked by
// looking at what they import and at their go statements.
package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Forbidden lists the packages a pure package must not import; their
// subpackages (os/exec, net/http, sync/atomic, math/rand/v2, …) are forbidden
// too. Randomness, like time, must come from the simulator; math itself is fine.
var Forbidden = []string{"math/rand", "net", "os", "syscall", "sync", "time"}

// IsForbidden reports whether importing path breaks purity.
func IsForbidden(path string) bool {
	for _, f := range Forbidden {
		if path == f || strings.HasPrefix(path, f+"/") {
			return true
		}
	}
	return false
}

// ListFormat is the go list -f template whose output Violations parses. The
// file names come last, one per field, so that no separator can clash.
const ListFormat = "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}\t{{.Dir}}{{range .GoFiles}}\t{{.}}{{end}}"

// Check fails t if pkg, or any non-standard package it depends on, imports a
// forbidden package or contains a go statement. Test files are not looked at
// (go list -deps without -test, and only GoFiles), so tests may use whatever
// they like.
//
// The standard library is trusted and not walked into: fmt imports os and
// sync, strings imports sync, yet fmt.Errorf and strings.Join do no I/O.
// Walking into it would forbid fmt and strings, which is not the point;
// what must not rot is our own code reaching for the network, the clock,
// randomness or a goroutine.
func Check(t testing.TB, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", ListFormat, pkg)
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

// Violations parses the output of go list -deps -f ListFormat pkg and lists,
// for pkg and every non-standard package it reaches, each forbidden import
// and each go statement in its files (read from disk), with the chain of
// imports that leads there from pkg.
func Violations(golist, pkg string) ([]string, error) {
	type info struct {
		imports, files []string
		dir            string
	}
	pkgs := map[string]info{} // non-standard packages only
	for _, line := range strings.Split(golist, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 4 {
			return nil, &parseError{line}
		}
		if fields[1] == "true" {
			continue
		}
		pkgs[fields[0]] = info{strings.Fields(fields[2]), fields[4:], fields[3]}
	}
	if _, ok := pkgs[pkg]; !ok {
		return nil, &parseError{"package " + pkg + " missing from go list output"}
	}
	// Breadth-first from pkg, so that each chain reported is a shortest one.
	via := map[string]string{pkg: ""}
	queue := []string{pkg}
	var out []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, f := range pkgs[p].files {
			lines, err := GoStatements(filepath.Join(pkgs[p].dir, f), nil)
			if err != nil {
				return nil, err
			}
			for _, l := range lines {
				out = append(out, fmt.Sprintf("%s: %s:%d: go statement", chain(via, p), f, l))
			}
		}
		for _, imp := range pkgs[p].imports {
			if IsForbidden(imp) {
				out = append(out, chain(via, p)+" imports "+imp)
				continue
			}
			if _, seen := via[imp]; seen {
				continue
			}
			if _, ours := pkgs[imp]; ours {
				via[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// GoStatements returns the lines of the go statements in a Go source file;
// src is as for parser.ParseFile (nil reads filename from disk).
func GoStatements(filename string, src any) ([]int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var lines []int
	ast.Inspect(f, func(n ast.Node) bool {
		if g, ok := n.(*ast.GoStmt); ok {
			lines = append(lines, fset.Position(g.Pos()).Line)
		}
		return true
	})
	return lines, nil
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
