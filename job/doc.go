// Package job turns the user's description of where to run — -H host
// lists, hostfiles, batch allocations, -np, -npernode, --map-by and
// --oversubscribe — into a job map: the nodes that get a daemon, in order,
// and the node each rank runs on.
//
// The rules follow Open MPI's mpirun, so that command lines and hostfiles
// written for Open MPI place ranks the same way under prsh. The package is
// pure: it starts no processes and opens no sockets, so placement can be
// table-tested and fuzzed in isolation. Only ReadHostfile (and
// DetectAllocation through it) touches the file system.
//
// Node i of a Map is served by daemon i+1; daemon 0 is mpirun itself.
package job
