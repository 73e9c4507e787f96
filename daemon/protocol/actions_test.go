package protocol

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// Actions names every type with an action method, each once: a new
// action joins the list, and so the drivers' tests, as it is written.
func TestActionsListsEveryAction(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, f := range pkgs["protocol"].Files {
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == "action" && fn.Recv != nil {
				declared = append(declared, "protocol."+fn.Recv.List[0].Type.(*ast.Ident).Name)
			}
		}
	}
	var listed []string
	for _, a := range Actions {
		listed = append(listed, fmt.Sprintf("%T", a))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if len(declared) == 0 || !slices.Equal(declared, listed) {
		t.Errorf("Actions lists %v; the package declares %v", listed, declared)
	}
}
