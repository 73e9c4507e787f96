// Command testbed-agent is the testbed's low-CPU launch agent, usable by
// any launcher as its rsh agent (see package prsh/testbed/agent):
//
//	testbed-agent HOST COMMAND...
//	mpirun --launch-agent 'testbed-agent %h' …
//	mpiexec.hydra -launcher rsh -launcher-exec testbed-agent …
package main

import (
	"os"
	"runtime"

	"prsh/testbed/agent"
)

// The UTS namespace is set on the calling thread; exec must come from it.
func init() { runtime.LockOSThread() }

func main() { os.Exit(agent.Main(os.Args[1:])) }
