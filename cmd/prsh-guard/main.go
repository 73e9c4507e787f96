// Command prsh-guard is a rank's guard (errmgr/proc): orted starts it
// once per rank, from beside its own binary, as
//
//	prsh-guard __rank-guard COUNT PATH ARGV...
//
// It is orted's own guard code in a binary of its own: small, static, and
// without the PMIx libraries, it starts in less than half the CPU that a
// second start of orted costs (spawn/PERFORMANCE.md). Without it beside
// orted, orted guards its ranks with itself.
package main

import (
	"fmt"
	"os"

	"prsh/errmgr"
	"prsh/errmgr/proc"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != proc.GuardArg {
		fmt.Fprintln(os.Stderr, "prsh-guard guards a rank of orted's; orted starts it, not you")
		os.Exit(errmgr.StatusFailed)
	}
	proc.RunGuard(os.Args[2:])
}
