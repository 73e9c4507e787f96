// Package formpirun starts mpirun's node guard in its init where the job
// runs on mpirun's host alone (early.StartForLocalJob): a program imports
// it for that alone (import _ "prsh/ranks/guard/early/formpirun"). Its
// init runs right after syscall's: package early says why.
package formpirun

import "prsh/ranks/guard/early"

func init() { early.StartForLocalJob() }
