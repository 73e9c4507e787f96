package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"prsh/internal/tcp"
)

// maxHops bounds a chain of jump hosts: a jump host whose own config sends
// it through itself would otherwise loop.
const maxHops = 8

func hopsError(t *target) error {
	return fmt.Errorf("ssh: more than %d jump hosts on the way to %s (a ProxyJump loop?)", maxHops, t.alias)
}

// dial opens the byte stream the ssh handshake runs over: a TCP
// connection, the ProxyCommand's standard input and output, or a channel
// through the jump hosts.
func (s *SSH) dial(ctx context.Context, t *target, hops int) (net.Conn, error) {
	switch {
	case t.proxyCommand != "":
		return s.startProxyCommand(t)
	case len(t.jumps) > 0:
		return s.dialJump(ctx, t, hops)
	}
	conn, err := tcp.Dial(ctx, net.Dialer{}, t.network, t.addr(), t.timeout)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, dialError(err, t.timeout)
	}
	return conn, nil
}

// dialJump connects to the last jump host (through those before it) and
// opens a direct-tcpip channel from there to t, as ssh -J does: the jump
// host resolves t's name and connects; t's host key is still checked here.
func (s *SSH) dialJump(ctx context.Context, t *target, hops int) (net.Conn, error) {
	if hops >= maxHops {
		return nil, hopsError(t)
	}
	last := len(t.jumps) - 1
	hop := t.jumps[last]
	jt, err := s.resolveJump(hop, t.jumps[:last])
	if err != nil {
		return nil, err
	}
	client, guard, err := s.connect(ctx, jt, hops+1)
	if err != nil {
		return nil, fmt.Errorf("jump host %s: %w", hop, err)
	}
	conn, err := client.DialContext(ctx, "tcp", t.addr())
	if !guard.release() {
		client.Close()
		return nil, fmt.Errorf("jump host %s: %w", hop, guard.explain(ctx, os.ErrDeadlineExceeded, "opening the channel"))
	}
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("ssh: jump host %s cannot reach %s: %w", hop, t.addr(), err)
	}
	return &jumpConn{Conn: conn, jump: client}, nil
}

// jumpConn is a channel through a jump host; closing it ends the jump
// host's connection too.
type jumpConn struct {
	net.Conn
	jump *ssh.Client
}

func (c *jumpConn) Close() error {
	err := c.Conn.Close()
	c.jump.Close()
	return err
}

// commandConn is a ProxyCommand as the connection: its standard output is
// read, its standard input written. Close kills it (its process group:
// `sh -c` may have children) and reaps it.
type commandConn struct {
	command string
	cmd     *exec.Cmd
	out, in *os.File // our ends of its stdout and stdin
	stderr  *tail
	done    chan struct{} // closed when it has been reaped
	err     error         // its Wait result, set before done closes
	once    sync.Once
}

var _ net.Conn = (*commandConn)(nil)

// startProxyCommand runs t's ProxyCommand with sh, as OpenSSH does.
func (s *SSH) startProxyCommand(t *target) (net.Conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("ssh: ProxyCommand: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("ssh: ProxyCommand: %w", err)
	}
	c := &commandConn{
		command: t.proxyCommand, out: outR, in: inW,
		stderr: newTail(s.log.With("host", t.alias), "ProxyCommand stderr"),
		done:   make(chan struct{}),
	}
	c.cmd = exec.Command("/bin/sh", "-c", "exec "+t.proxyCommand)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.WaitDelay = time.Second // a child that escaped the group must not hold Wait
	err = c.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("ssh: ProxyCommand %s: %w", t.proxyCommand, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *commandConn) Read(b []byte) (int, error)  { return c.out.Read(b) }
func (c *commandConn) Write(b []byte) (int, error) { return c.in.Write(b) }
func (c *commandConn) LocalAddr() net.Addr         { return probeAddr{} }
func (c *commandConn) RemoteAddr() net.Addr        { return probeAddr{} }

func (c *commandConn) SetDeadline(t time.Time) error {
	return errors.Join(c.out.SetReadDeadline(t), c.in.SetWriteDeadline(t))
}
func (c *commandConn) SetReadDeadline(t time.Time) error  { return c.out.SetReadDeadline(t) }
func (c *commandConn) SetWriteDeadline(t time.Time) error { return c.in.SetWriteDeadline(t) }

// Close ends the command and reaps it.
func (c *commandConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		c.out.Close()
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	})
	return nil
}

// failed explains a handshake that failed over the command: usually the
// command itself failed and closed its output as it exited, so its exit
// status and standard error say why. It closes the connection.
func (c *commandConn) failed(err error) error {
	select {
	case <-c.done:
	case <-time.After(2 * time.Second): // still running: it is not the cause
	}
	exited := false
	select {
	case <-c.done:
		exited = true
	default:
	}
	c.Close()
	if exited {
		if c.err == nil {
			return fmt.Errorf("ssh: ProxyCommand %s exited before the ssh handshake ended: %w", c.command, err)
		}
		// %v: the *ExitError is the proxy's, not the remote command's.
		return fmt.Errorf("ssh: ProxyCommand %s: %v", c.command, exitError(c.err, c.stderr.String()))
	}
	if tail := c.stderr.String(); tail != "" {
		return fmt.Errorf("%w (ProxyCommand %s said: %s)", err, c.command, tail)
	}
	return err
}
