package mpirun

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"prsh/daemon/protocol"
	"prsh/iof"
)

func outputOptions(c *cli.Context) iof.Options {
	return iof.Options{
		Tag: c.Bool("tag-output"), PrependRank: c.Bool("prepend-rank"),
		Timestamp: c.Bool("timestamp-output"), FileDir: absPath(c.String("output-filename")),
	}
}

// stdinSource is what mpirun forwards: nothing when no rank takes it, or
// when mpirun runs in the background of a terminal, where reading would
// stop it with SIGTTIN and steal the shell's typeahead.
func stdinSource(target int) io.Reader {
	if target == protocol.StdinNone || inBackground() {
		return nil
	}
	return os.Stdin
}

func inBackground() bool {
	fg, err := unix.IoctlGetInt(int(os.Stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && fg != unix.Getpgrp()
}

// forwardedSignals are the signals mpirun passes on to every rank, on top
// of the ones it acts on itself (INT, TERM, HUP, TSTP, CONT).
func forwardedSignals(extra string) ([]os.Signal, error) {
	sigs := []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2}
	for _, name := range strings.Split(extra, ",") {
		name = strings.ToUpper(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		s := unix.SignalNum("SIG" + strings.TrimPrefix(name, "SIG"))
		if n, err := strconv.Atoi(name); err == nil {
			s = syscall.Signal(n)
		}
		if s <= 0 || s == syscall.SIGKILL || s == syscall.SIGSTOP || unix.SignalName(s) == "" {
			return nil, fmt.Errorf("--forward-signals: %q is not a signal that can be forwarded", name)
		}
		sigs = append(sigs, s)
	}
	return sigs, nil
}

// waitingLine is mpirun's stderr with the launch's waiting line (who has
// not called back): in place on a terminal; elsewhere a plain line now
// and then, with -v (or --log-level info or lower) only. nil: none.
func waitingLine(c *cli.Context) *iof.WaitingLine {
	fd := int(os.Stderr.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
		return iof.NewWaitingLine(os.Stderr, true, func() int {
			ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
			if err != nil {
				return 0
			}
			return int(ws.Col)
		})
	}
	if level := hclog.LevelFromString(logLevel(c)); level != hclog.NoLevel && level <= hclog.Info {
		return iof.NewWaitingLine(os.Stderr, false, nil)
	}
	return nil
}

// stderrOf is where mpirun writes its own lines: through the waiting
// line when there is one.
func stderrOf(waiting *iof.WaitingLine) io.Writer {
	if waiting == nil {
		return os.Stderr
	}
	return waiting
}
