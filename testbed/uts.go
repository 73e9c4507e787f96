package testbed

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// utsHelperArg is the hidden argv[1] by which the cluster re-executes its
// own binary inside fresh namespaces (UTS, mount):
//
//	EXE __testbed_uts HOSTNAME HIDE PATH ARGV0 ARGS...
//
// HOSTNAME "" keeps the host's name; HIDE lists the directories to hide
// (Config.Hide), joined by ':', "" for none.
const utsHelperArg = "__testbed_uts"

// The hook also runs from init, so that a binary importing testbed cannot
// mistake the helper invocation for a normal run (a test binary would
// otherwise run its whole test suite inside every node process).
func init() { MaybeRunUTSHelper() }

// MaybeRunUTSHelper must be called first thing in main, and in TestMain of
// test binaries that start clusters with Config.UTS or Config.Hide. If the
// process was started as the helper, it sets the hostname of its (new)
// UTS namespace, hides the directories in its (new) mount namespace, and
// execs the node's command; it never returns in that case. Otherwise it
// returns at once.
func MaybeRunUTSHelper() {
	if len(os.Args) < 6 || os.Args[1] != utsHelperArg {
		return
	}
	host, hide, path, argv := os.Args[2], os.Args[3], os.Args[4], os.Args[5:]
	if host != "" {
		if err := syscall.Sethostname([]byte(host)); err != nil {
			fmt.Fprintf(os.Stderr, "testbed: sethostname %s: %v\n", host, err)
			os.Exit(255)
		}
	}
	if hide != "" {
		if err := hideDirs(strings.Split(hide, ":")); err != nil {
			fmt.Fprintf(os.Stderr, "testbed: %v\n", err)
			os.Exit(255)
		}
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "testbed: exec %s: %v\n", path, err)
	os.Exit(127)
}

// hideDirs mounts an empty read-only tmpfs over each directory, in this
// process's own mount namespace, whose mounts it first makes private so
// that nothing leaks to the host's.
func hideDirs(dirs []string) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	for _, d := range dirs {
		if err := syscall.Mount("testbed-hidden", d, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, "size=4k"); err != nil {
			return fmt.Errorf("hiding %s: %w", d, err)
		}
	}
	return nil
}
