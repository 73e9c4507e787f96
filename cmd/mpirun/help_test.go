package main

import (
	"strings"
	"testing"
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
