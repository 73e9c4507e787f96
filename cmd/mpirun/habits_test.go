package main

import (
	"slices"
	"strings"
	"testing"
)

// TestContextOptionValues: an option after ':' takes its values however
// many dashes it is written with, and one short of them is an error, not
// a crash.
func TestContextOptionValues(t *testing.T) {
	ctx, err := parseContext([]string{"--env", "A", "b", "-mca", "k", "v", "--np", "2", "prog", "arg"})
	if err != nil || !slices.Equal(ctx.env, []string{"A=b", "OMPI_MCA_k=v"}) || ctx.np != 2 || !slices.Equal(ctx.argv, []string{"prog", "arg"}) {
		t.Errorf("got %+v, %v", ctx, err)
	}
	for _, args := range [][]string{{"--env", "A"}, {"--mca", "k"}, {"-np"}} {
		if _, err := parseContext(args); err == nil || !strings.Contains(err.Error(), "needs") {
			t.Errorf("%v: error %v", args, err)
		}
	}
}
