// Command prte is Open MPI's name for starting a DVM: mpirun --dvm-start,
// with every flag of mpirun's (cmd/internal/mpirun).
package main

import "prsh/cmd/internal/mpirun"

func main() { mpirun.Main(mpirun.Prte) }
