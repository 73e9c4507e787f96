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
	"prsh/internal/stall"
	"prsh/iof"
	"prsh/spawn/agent"
	"prsh/transport"
)

// AliveLine is what a new orted writes on its stdout as it starts: its
// sign of life to the parent, which waits for its call back from then on.
const AliveLine = "orted: alive\n"

// welcomeTimeout bounds how long a new orted may take to call back and
// get its parent's Welcome: twice the job's callback timeout. The parent
// decides, stretching the timeout while its children keep calling back;
// this bound is for a parent that hangs without closing the session.
func (d *Daemon) welcomeTimeout() time.Duration {
	return 2 * ms(d.cfg.Timeouts.CallbackMS)
}

// ms turns one of the bounds, kept in milliseconds, into a Duration.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// callBack connects a new orted to its spawn parent, announces its id and
// contact address, opens its output stream and waits for the Welcome.
func (d *Daemon) callBack() (protocol.Welcome, error) {
	ctx, cancel := stall.WithTimeout(d.ctx, d.welcomeTimeout())
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
	// An orted orphaned while it waits gives up at once; one that waits
	// too long, at its deadline.
	stopWatch := context.AfterFunc(ctx, func() { conn.Close() })
	welcome, err := readWelcome(ctrl)
	if !stopWatch() { // the watch closed the connection: say why
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no job within twice the callback timeout (%v)", d.welcomeTimeout())
		}
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
func (d *Daemon) dialParent(ctx context.Context) (Session, error) {
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		conn, err := d.network.Dial(ctx, d.cfg.ParentAddr)
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

// readWelcome reads the first frame, which must be the Welcome; the
// caller bounds the wait.
func readWelcome(ctrl io.Reader) (protocol.Welcome, error) {
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
	t := d.cfg.Timeouts
	return transport.Options{LocalIP: d.cfg.Bind, Ports: d.cfg.Ports, Logger: d.log.Named("transport"),
		KeepAlive: ms(t.KeepAliveMS), Silence: ms(t.SilenceMS), HandshakeTimeout: ms(t.HandshakeMS)}
}

// agentFor builds the launch agent an orted uses for its own children.
func agentFor(job protocol.JobSpec, log hclog.Logger) (agent.Agent, error) {
	if job.LaunchAgent != "" {
		return agent.NewCommand(job.LaunchAgent)
	}
	if job.SrunJob != "" {
		return &agent.Srun{JobID: job.SrunJob, Logger: log.Named("srun")}, nil
	}
	return agent.NewSSH(agent.SSHOptions{
		ConfigFile:       job.SSHConfig,
		SystemConfigFile: job.SSHSystemConfig,
		ConnectTimeout:   time.Duration(job.SSHTimeoutMS) * time.Millisecond,
		MaxSessions:      job.MaxSessions,
		Logger:           log.Named("ssh"),
	})
}

// ortedArgv is the command that starts the orted of daemon id on host,
// whose parent listens at parent. The secret is not in it: it goes on the
// child's stdin.
func ortedArgv(job protocol.JobSpec, parent string, id int, host string) []string {
	return ortedCommand(job, parent, "--id", strconv.Itoa(id), "--node", host)
}

// ortedCommand is the orted's command line with identity, the words that
// say which daemon it is.
func ortedCommand(job protocol.JobSpec, parent string, identity ...string) []string {
	argv := []string{job.OrtedPath, "--protocol", strconv.Itoa(protocol.Version), "--parent", parent}
	argv = append(argv, identity...)
	if bounds := job.Timeouts.String(); bounds != "" {
		argv = append(argv, "--timeouts", bounds)
	}
	if job.LogLevel != "" {
		argv = append(argv, "--log-level", job.LogLevel)
	}
	if job.PortRange != "" {
		argv = append(argv, "--port-range", job.PortRange)
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
