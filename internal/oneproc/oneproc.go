// Package oneproc runs a daemon's goroutines on one P from its start:
// a program imports it for that alone (import _ "prsh/internal/oneproc").
//
// A daemon mostly waits; with more Ps every wake-up hands work between
// threads, and the runtime checks the CPU limit periodically, for the
// daemon's whole life. Calling runtime.GOMAXPROCS(1) from main is late:
// by then the package inits have filled the mcache of the P it removes,
// and flushing it touches a fresh page per size class (an orted's start:
// about 450 page faults with the call in main, 340 with it here). Go
// initializes a ready package in import-path order, and this one needs
// only the runtime, so its init runs before nearly every other.
package oneproc

import "runtime"

func init() { runtime.GOMAXPROCS(1) }
