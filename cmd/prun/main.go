// Command prun is Open MPI's name for running a job in a DVM: mpirun
// --dvm, with every flag of mpirun's; the DVM is $PRSH_DVM's unless
// --dvm names one (cmd/internal/mpirun).
package main

import "prsh/cmd/internal/mpirun"

func main() { mpirun.Main(mpirun.Prun) }
