// Package modex will hold the ranks' exchange: the key-value store, the
// fence as a collective over the routing tree, allgather and ring, and the
// PMI-1 and PMI-2 wire servers each orted runs for its local ranks
// (../shared/docs/pmi-wire.md). It is the next step after the launch core;
// nothing here is used yet.
package modex
