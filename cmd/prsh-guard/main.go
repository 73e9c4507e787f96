// Command prsh-guard is a node's guard (ranks/guard): orted starts it
// once per node, at its first start of ranks, from beside its own
// binary, and keeps it for its life (a DVM's orted, for all its jobs), as
//
//	prsh-guard __rank-guard-vN STOPPED-MS
//
// with its socket to orted as descriptor 3, on which orted asks it to
// start each rank.
// It is orted's own guard code in a binary of its own: small, static, and
// without the PMIx libraries, it starts in less than half the CPU that a
// second start of orted costs (lab/notebooks/PERFORMANCE.md). Without it
// beside orted, orted guards its ranks with itself.
package main

import (
	"fmt"
	"os"
	"strings"

	"prsh/errmgr"
	_ "prsh/internal/oneproc" // as RunGuard asks, from the start
	"prsh/ranks/guard"
)

func main() {
	switch {
	case len(os.Args) > 1 && os.Args[1] == guard.GuardArg:
		guard.RunGuard(os.Args[2:])
	case len(os.Args) > 1 && strings.HasPrefix(os.Args[1], guard.GuardArgPrefix):
		self, _ := os.Executable()
		fmt.Fprintf(os.Stderr, "prsh-guard: %s is of another prsh than the orted that started it: install the same prsh on every node\n", self)
	default:
		fmt.Fprintln(os.Stderr, "prsh-guard guards a rank of orted's; orted starts it, not you")
	}
	os.Exit(errmgr.StatusFailed)
}
