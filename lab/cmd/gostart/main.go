// Command gostart starts the Go runtime and nothing else, then execs its
// arguments: put in front of a C launcher's processes, it adds what a
// process costs a launcher written in Go before any of its own code runs
// (bench's --go-floor rows).
//
// Run as DIR/hydra_pmi_proxy it stands for Hydra's proxy: it execs
// DIR/hydra_pmi_proxy.real with its arguments, through DIR/gostart first
// where that exists (two Go starts a node instead of one).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

func main() {
	argv := os.Args[1:]
	if filepath.Base(os.Args[0]) == "hydra_pmi_proxy" {
		dir := filepath.Dir(os.Args[0])
		argv = append([]string{filepath.Join(dir, "hydra_pmi_proxy.real")}, argv...)
		if again := filepath.Join(dir, "gostart"); exists(again) {
			argv = append([]string{again}, argv...)
		}
	}
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: gostart PROGRAM [ARGS...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(argv[0])
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "gostart: %v\n", err)
	os.Exit(127)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
