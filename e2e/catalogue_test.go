package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCatalogue: README.md names every test and benchmark of the package
// and no other, so the catalogue cannot fall behind the files.
func TestCatalogue(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:Test|Benchmark)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(readme), -1) {
		listed[m[1]] = true
	}
	files, _ := filepath.Glob("*_test.go")
	fset := token.NewFileSet()
	defined := map[string]bool{}
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			name := ""
			if ok && fn.Recv == nil {
				name = fn.Name.Name
			}
			if (strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Benchmark")) && name != "TestMain" {
				defined[name] = true
			}
		}
	}
	for name := range defined {
		if !listed[name] {
			t.Errorf("%s is not in README.md's catalogue", name)
		}
	}
	for name := range listed {
		if !defined[name] && name != "TestMain" {
			t.Errorf("README.md lists %s, which no file defines", name)
		}
	}
}
