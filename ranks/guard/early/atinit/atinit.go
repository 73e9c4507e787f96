// Package atinit starts mpirun's node guard in its init, which Go runs
// before nearly every other package's (it needs only syscall, strconv,
// strings and sync, and sorts before them by import path): a program
// imports it for that alone (import _ "prsh/ranks/guard/early/atinit").
// See package early for when it starts one.
package atinit

import "prsh/ranks/guard/early"

func init() { early.StartForLocalJob() }
