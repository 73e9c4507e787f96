package mpirun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/dvm"
	"prsh/errmgr"
)

// daemonize starts the DVM of this command line in the background (prte
// --daemonize): the same command without --daemonize, in a session of
// its own, so that no terminal's signal reaches it, with no terminal
// for its streams. It returns once the DVM is up, having printed its URI
// as --dvm-start does, or with the DVM's status and its lines if it
// could not start. An interrupt meanwhile is passed on to it. The DVM's
// lines go on into its log (dvm.LogPath), which outlives it.
func daemonize(c *cli.Context) error {
	if !c.Bool("dvm-start") {
		return usageError{errors.New("--daemonize goes with --dvm-start (prte)")}
	}
	args := withoutDaemonize(os.Args[1:])
	uriFile := absPath(c.String("dvm-uri"))
	if uriFile != "" {
		os.Remove(uriFile) // an earlier DVM's URI is not this one's
	} else {
		dir, err := os.MkdirTemp("", "prsh-dvm-start-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		uriFile = filepath.Join(dir, "uri")
		args = slices.Concat([]string{"--dvm-uri", uriFile}, args)
	}
	log, err := dvm.NewStartLog()
	if err != nil {
		return err
	}
	dvmCmd, err := startDetached(args, log)
	if err != nil {
		os.Remove(log.Name())
		return err
	}
	uri, status := awaitUp(dvmCmd, uriFile)
	if uri != "" {
		if err := os.Rename(log.Name(), dvm.LogPath(uri)); err != nil {
			fmt.Fprintf(os.Stderr, "mpirun: warning: the DVM's lines go to %s: %v\n", log.Name(), err)
		}
		fmt.Println(uri)
		return nil
	}
	defer os.Remove(log.Name())
	b, _ := os.ReadFile(log.Name())
	os.Stderr.Write(b)
	if len(b) == 0 {
		fmt.Fprintf(os.Stderr, "mpirun: the DVM exited with status %d before it was up\n", status)
	}
	if status <= 0 { // killed by a signal, or 0 without being up
		status = errmgr.StatusFailed
	}
	return exitStatus(status)
}

// withoutDaemonize is args without the --daemonize among its options.
func withoutDaemonize(args []string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return strings.HasPrefix(a, "-") && name == "daemonize"
	})
}

// startDetached starts this program with args in a session of its own,
// its stdin and stdout /dev/null and its stderr the file log, which it
// closes.
func startDetached(args []string, log *os.File) (*exec.Cmd, error) {
	defer log.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, cmd.Start()
}

// awaitUp waits for the DVM's URI in uriFile, or its exit: the URI, or
// "" and its exit status.
func awaitUp(cmd *exec.Cmd, uriFile string) (string, int) {
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case st := <-exited:
			return "", st
		case sig := <-sigs:
			cmd.Process.Signal(sig)
		case <-tick.C:
			if uri, err := dvm.Resolve(uriFile); err == nil {
				return uri, 0
			}
		}
	}
}
