// Package modex holds the pure side of the ranks' exchange (modex): what
// every daemon computes the same way, with no I/O, clocks or goroutines
// (its purity test keeps it so). Today that is the job's key-value space
// as of one fence (View, which the fence over the daemon tree extends) and
// the PMI_process_mapping string MPICH reads to learn which ranks share a
// node (ProcessMapping).
//
// The collectives themselves (fence, allgather, PMIX_Ring: reduce up the
// daemon tree, result back down) are one pure machine in modex/collective,
// which the daemons' protocol machine (daemon/protocol) composes: start
// there to see where a fence completes.
//
// The PMI-1 and PMI-2 wire servers that each orted runs for its local ranks
// are the driver part beside it, in modex/pmi: they turn the clients' bytes
// into calls on a Backend that the daemon implements with these pieces
// (see pmi/WIRE.md).
package modex
