// Package compat holds the command-line personalities of Open MPI's and
// MPICH Hydra's mpirun that prsh's mpirun accepts, as PRRTE's "schizo"
// framework holds them for prterun: the peers' flags prsh lacks and what
// to use instead, --mca parameters and the variables that carry them,
// Open MPI's older switches, Hydra's -genv/-env family and the peers'
// hostfile variables.
//
// The package is pure: values in, values out (warnings are returned, not
// printed), so that every spelling can be table-tested.
package compat
