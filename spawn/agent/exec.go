package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/hashicorp/go-hclog"
)

// startExec starts a local command (the daemon itself for Fork, the
// launcher for Command) with the shared stdin/stderr discipline. ctx bounds
// the start only: the command is deliberately not an exec.CommandContext,
// it outlives the Start call.
func startExec(ctx context.Context, cmd *exec.Cmd, payload []byte, log hclog.Logger) (Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stderr := newTail(log, "stderr")
	cmd.Stderr = stderr
	stdout := newSignOfLife(log)
	cmd.Stdout = stdout
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, err
	}
	log.Debug("started", "pid", cmd.Process.Pid, "argv", cmd.Args)
	kill := func() { killProcess(cmd.Process, log) }
	p := newProc(stdin, stderr, stdout, cmd.Wait, kill, kill)
	if err := p.feed(ctx, payload); err != nil {
		return nil, err
	}
	return p, nil
}

// killProcess kills p unless it has already been reaped.
func killProcess(p *os.Process, log hclog.Logger) {
	err := p.Kill()
	switch {
	case err == nil:
		log.Debug("killed after close grace", "pid", p.Pid)
	case !errors.Is(err, os.ErrProcessDone):
		log.Warn("kill", "pid", p.Pid, "error", err)
	}
}
