package daemon

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/protocol"
	"prsh/iof"
	"prsh/spawn/launch"
	"prsh/transport"
)

// welcomeTimeout bounds how long a new orted waits for its parent's
// Welcome after calling back.
const welcomeTimeout = 30 * time.Second

// callBack connects a new orted to its spawn parent, announces its id and
// contact address, opens its output stream and waits for the Welcome.
func (d *Daemon) callBack() (protocol.Welcome, error) {
	ctx, cancel := context.WithTimeout(d.ctx, welcomeTimeout)
	defer cancel()
	orphaned := d.orphaned
	go func() {
		select {
		case <-orphaned:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := d.dialParent(ctx)
	if err != nil {
		return protocol.Welcome{}, fmt.Errorf("%s: cannot call back parent at %s: %w", d.cfg.Node, d.cfg.ParentAddr, err)
	}
	ctrl, err := openStream(conn, streamControl)
	if err == nil {
		err = writeMessage(ctrl, protocol.Hello{ID: d.cfg.ID, Addr: d.addr})
	}
	if err != nil {
		conn.Close()
		return protocol.Welcome{}, fmt.Errorf("%s: calling back parent: %w", d.cfg.Node, err)
	}
	out, err := openStream(conn, streamOutput)
	if err != nil {
		conn.Close()
		return protocol.Welcome{}, fmt.Errorf("%s: opening the output stream: %w", d.cfg.Node, err)
	}
	// An orted orphaned while it waits gives up at once.
	stopWatch := context.AfterFunc(ctx, func() { conn.Close() })
	welcome, err := readWelcome(ctrl)
	if !stopWatch() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return protocol.Welcome{}, fmt.Errorf("%s: waiting for the job from parent: %w", d.cfg.Node, err)
	}
	d.upStream = out
	d.sink = iof.NewSender(out)
	d.parent = d.newLink(welcome.Parent, conn, ctrl)
	return welcome, nil
}

// dialParent connects to the parent, trying again while ctx allows: a
// parent busy spawning its other children may be slow to answer. A wrong
// secret is final.
func (d *Daemon) dialParent(ctx context.Context) (*transport.Conn, error) {
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		conn, err := transport.Dial(ctx, d.cfg.ParentAddr, d.cfg.Secret, d.transportOptions())
		if err == nil || errors.Is(err, transport.ErrBadProof) {
			return conn, err
		}
		d.log.Debug("calling back parent", "error", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

func readWelcome(ctrl interface {
	io.Reader
	SetReadDeadline(time.Time) error
}) (protocol.Welcome, error) {
	ctrl.SetReadDeadline(time.Now().Add(welcomeTimeout))
	defer ctrl.SetReadDeadline(time.Time{})
	kind, payload, err := transport.ReadFrame(ctrl, transport.MaxFrame)
	if err != nil {
		return protocol.Welcome{}, err
	}
	msg, err := protocol.Decode(kind, payload)
	if err != nil {
		return protocol.Welcome{}, err
	}
	welcome, ok := msg.(protocol.Welcome)
	if !ok {
		return protocol.Welcome{}, fmt.Errorf("expected the job, got %T", msg)
	}
	return welcome, nil
}

func (d *Daemon) transportOptions() transport.Options {
	return transport.Options{LocalIP: d.cfg.Bind, Logger: d.log.Named("transport")}
}

// agentFor builds the launch agent an orted uses for its own children.
func agentFor(job protocol.JobSpec, log hclog.Logger) (launch.Agent, error) {
	if job.LaunchAgent != "" {
		return launch.NewCommand(job.LaunchAgent)
	}
	return launch.NewSSH(launch.SSHOptions{
		ConfigFile:     job.SSHConfig,
		ConnectTimeout: time.Duration(job.SSHTimeoutMS) * time.Millisecond,
		MaxSessions:    job.MaxSessions,
		Logger:         log.Named("ssh"),
	})
}

// ortedArgv is the command that starts a child's orted. The secret is not
// in it: it goes on the child's stdin.
func (d *Daemon) ortedArgv(id int, host string) []string {
	job := d.machine.Job()
	argv := []string{job.OrtedPath, "--parent", d.addr, "--id", strconv.Itoa(id), "--node", host}
	if job.LogLevel != "" {
		argv = append(argv, "--log-level", job.LogLevel)
	}
	return argv
}

// secretLine is what a child reads first on its stdin.
func (d *Daemon) secretLine() []byte {
	return []byte(hex.EncodeToString(d.cfg.Secret) + "\n")
}

// watchLifeline closes orphaned when the orted's stdin closes: the ssh
// session that started it is gone, so its parent is gone.
func (d *Daemon) watchLifeline() {
	io.Copy(io.Discard, d.cfg.Lifeline)
	close(d.orphaned)
}

func (d *Daemon) isOrphaned() bool {
	select {
	case <-d.orphaned:
		return true
	default:
		return false
	}
}
