//go:build !cpuprofile

package profile

import (
	"fmt"
	"os"
)

// Start says, if PRSH_CPUPROFILE is set, that this build writes no
// profile: a silent nothing would pass for a process that did not exit
// normally.
func Start(name string) (stop func()) {
	if os.Getenv(profileVar) != "" {
		fmt.Fprintf(os.Stderr, "%s: %s is set, but this build has no CPU profiles (make bin CPUPROFILE=1)\n", name, profileVar)
	}
	return func() {}
}
