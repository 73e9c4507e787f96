// Command mpirun launches a parallel job: it spawns one orted per node along
// a δ-ary tree over ssh, the daemons exchange their addresses, and the
// application is started on every node (cmd/internal/mpirun).
package main

import (
	"prsh/cmd/internal/mpirun"
	_ "prsh/ranks/guard/early/formpirun" // this node's guard, started beside mpirun's own start where the job is on this host alone
)

func main() { mpirun.Main(mpirun.Mpirun) }
