package testbed

import (
	"fmt"
	"os"
	"syscall"
)

// utsHelperArg is the hidden argv[1] by which the cluster re-executes its
// own binary inside a fresh UTS namespace:
//
//	EXE __testbed_uts HOSTNAME PATH ARGV0 ARGS...
const utsHelperArg = "__testbed_uts"

// The hook also runs from init, so that a binary importing testbed cannot
// mistake the helper invocation for a normal run (a test binary would
// otherwise run its whole test suite inside every node process).
func init() { MaybeRunUTSHelper() }

// MaybeRunUTSHelper must be called first thing in main, and in TestMain of
// test binaries that start clusters with Config.UTS. If the process was
// started as the UTS helper, it sets the hostname of its (new) UTS
// namespace and execs the node's command; it never returns in that case.
// Otherwise it returns at once.
func MaybeRunUTSHelper() {
	if len(os.Args) < 5 || os.Args[1] != utsHelperArg {
		return
	}
	host, path, argv := os.Args[2], os.Args[3], os.Args[4:]
	if err := syscall.Sethostname([]byte(host)); err != nil {
		fmt.Fprintf(os.Stderr, "testbed: sethostname %s: %v\n", host, err)
		os.Exit(255)
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "testbed: exec %s: %v\n", path, err)
	os.Exit(127)
}
