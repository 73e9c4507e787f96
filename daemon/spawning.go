package daemon

import (
	"errors"
	"fmt"
	"io"
	"net"

	"prsh/daemon/protocol"
	"prsh/internal/stall"
	"prsh/spawn"
	"prsh/spawn/agent"
	"prsh/transport"
)

// spawn starts a child's orted through the launch agent. The sessions
// start in the order they are asked for (agent.InTurn), the tree's.
func (d *Daemon) spawn(n spawn.Node) {
	argv, stdin := ortedArgv(d.machine.Job(), d.addr, n.ID, n.Host), d.secretLine()
	a, err := d.launchAgent()
	ctx, started := agent.InTurn(d.ctx, d.lastSpawn)
	d.lastSpawn = started
	go func() {
		var proc agent.Process
		if err == nil {
			proc, err = a.Start(ctx, n.Host, argv, stdin)
		}
		agent.PassTurn(ctx)
		if !d.post(spawned{n.ID, proc, err}) && proc != nil {
			proc.Close()
		}
	}()
}

// launchAgent is the agent that starts this daemon's children: mpirun's
// own, or the one an orted makes from the job at its first spawn. A leaf
// of the tree never makes one (reading the ssh configuration was 3 % of
// a leaf orted's CPU).
func (d *Daemon) launchAgent() (agent.Agent, error) {
	switch {
	case d.agent != nil || d.agentErr != nil:
	case d.isRoot():
		d.agentErr = fmt.Errorf("%s: no launch agent to start daemons with", d.cfg.Node)
	default:
		a, err := agentFor(d.machine.Job(), d.log)
		if err != nil {
			d.agentErr = fmt.Errorf("%s: %w", d.cfg.Node, err)
		} else {
			d.agent = a
		}
	}
	return d.agent, d.agentErr
}

func (d *Daemon) acceptLoop() {
	for {
		conn, err := d.ln.Accept(d.ctx)
		if err != nil {
			if d.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				d.post(protocol.CannotContinue{Err: "cannot accept connections from other daemons: " + d.explain(err).Error()})
			}
			return
		}
		go d.greet(conn)
	}
}

// greet reads an accepted connection's Hello and hands it to the loop.
func (d *Daemon) greet(conn Session) {
	timer := d.clock.AfterFunc(ms(d.cfg.Timeouts.HelloMS), func() { conn.Close() })
	defer timer.Stop()
	ctrl, err := conn.Accept()
	if err != nil {
		conn.Close()
		return
	}
	hello, err := readHello(ctrl)
	if err != nil {
		// The peer proved the secret, so it is one of the job's daemons;
		// one that hangs up before its hello is going away (a job being
		// stopped), which is not worth a line on the user's terminal.
		logf := d.log.Warn
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
			logf = d.log.Debug
		}
		logf("dropping connection without hello", "peer", conn.RemoteAddr().String(), "error", err)
		conn.Close()
		return
	}
	timer.Stop()
	if !d.post(accepted{conn, ctrl, hello.ID}) {
		conn.Close()
	}
}

func readHello(ctrl net.Conn) (protocol.Hello, error) {
	var tag [1]byte
	if _, err := ctrl.Read(tag[:]); err != nil {
		return protocol.Hello{}, err
	}
	if tag[0] != streamControl {
		return protocol.Hello{}, fmt.Errorf("first stream is not a control stream")
	}
	kind, payload, err := transport.ReadFrame(ctrl, transport.MaxFrame)
	if err != nil {
		return protocol.Hello{}, err
	}
	msg, err := protocol.Decode(kind, payload)
	if err != nil {
		return protocol.Hello{}, err
	}
	hello, ok := msg.(protocol.Hello)
	if !ok {
		return protocol.Hello{}, fmt.Errorf("expected hello, got %T", msg)
	}
	return hello, nil
}

// dial connects to a routing neighbour and introduces this daemon.
func (d *Daemon) dial(peer int, addr string) {
	go func() {
		conn, ctrl, err := d.connect(addr)
		if !d.post(dialled{peer, conn, ctrl, err}) && conn != nil {
			conn.Close()
		}
	}()
}

// connect dials a neighbour and says who this daemon is, within the
// bounds on a handshake and a hello.
func (d *Daemon) connect(addr string) (Session, net.Conn, error) {
	ctx, cancel := stall.WithTimeout(d.ctx, ms(d.cfg.Timeouts.HandshakeMS+d.cfg.Timeouts.HelloMS))
	defer cancel()
	conn, err := d.network.Dial(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	ctrl, err := openStream(conn, streamControl)
	if err == nil {
		err = writeMessage(ctrl, protocol.Hello{ID: d.cfg.ID, Addr: d.addr})
	}
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, ctrl, nil
}

// writeMessage writes one message straight to a stream, for the Hello
// that precedes a link's writer.
func writeMessage(s net.Conn, msg protocol.Message) error {
	kind, payload, err := protocol.Encode(msg)
	if err != nil {
		return err
	}
	return transport.WriteFrame(s, kind, payload)
}
