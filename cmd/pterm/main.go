// Command pterm is Open MPI's name for stopping a DVM: mpirun --dvm-stop
// [URI|FILE], $PRSH_DVM's DVM unless one is named (cmd/internal/mpirun).
package main

import "prsh/cmd/internal/mpirun"

func main() { mpirun.Main(mpirun.Pterm) }
