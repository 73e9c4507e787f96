package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"prsh/testbed/nodes"
)

// loginGrace bounds an unauthenticated connection, like sshd's
// LoginGraceTime, so a client that stalls mid-handshake does not pin a
// goroutine for the cluster's whole life.
const loginGrace = 2 * time.Minute

// node is the server side of one virtual node.
type node struct {
	Node
	fault Fault
	ssh   *ssh.ServerConfig

	startups  atomic.Int64 // connections in their handshake, for MaxStartups
	dropped   atomic.Int64 // connections closed because of MaxStartups
	dead      atomic.Bool  // set when KillAfter fired
	firstOnce sync.Once    // arms KillAfter at the first session
}

// listenAll opens one listener per node on ADDR:0.
func (c *Cluster) listenAll(k *keys) error {
	for i := 1; i <= c.cfg.Nodes; i++ {
		n, err := c.newNode(i, k)
		if err != nil {
			return err
		}
		c.nodes = append(c.nodes, n)
	}
	return nil
}

func (c *Cluster) newNode(i int, k *keys) (*node, error) {
	ip, err := nodes.Addr(c.block, i)
	if err != nil {
		return nil, err
	}
	name := nodes.Name(i, c.cfg.Nodes)
	n := &node{Node: Node{Name: name, Addr: ip.String()}, fault: c.cfg.Faults[name]}
	n.ssh = c.serverConfig(k, n.fault.WrongHostKey)
	if n.fault.Refuse {
		n.Port, err = c.reservePort(ip)
		return n, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(n.Addr, "0"))
	if err != nil {
		return nil, fmt.Errorf("testbed: %s: listen: %w", name, err)
	}
	if !c.addCloser(ln) {
		ln.Close()
		return nil, errors.New("testbed: closed while starting")
	}
	n.Port = ln.Addr().(*net.TCPAddr).Port
	c.wg.Add(1)
	go c.acceptLoop(n, ln)
	return n, nil
}

// serverConfig accepts only the cluster's client key for the current user.
func (c *Cluster) serverConfig(k *keys, wrongHostKey bool) *ssh.ServerConfig {
	want := k.clientPub.Marshal()
	cfg := &ssh.ServerConfig{
		ServerVersion: "SSH-2.0-prsh_testbed",
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if meta.User() != c.user {
				return nil, fmt.Errorf("testbed: no such user %q", meta.User())
			}
			if !bytes.Equal(key.Marshal(), want) {
				return nil, errors.New("testbed: unknown client key")
			}
			return nil, nil
		},
	}
	if wrongHostKey {
		cfg.AddHostKey(k.wrongHost)
	} else {
		cfg.AddHostKey(k.host)
	}
	return cfg
}

// reservePort binds a socket to ip:0 without listening: connecting to it
// gets ECONNREFUSED, and no other socket can take the port meanwhile.
func (c *Cluster) reservePort(ip netip.Addr) (int, error) {
	fd, err := bindOnly(ip.As4(), 0)
	if err != nil {
		return 0, fmt.Errorf("testbed: reserve port on %s: %w", ip, err)
	}
	sa, err := syscall.Getsockname(int(fd))
	if err != nil {
		fd.Close()
		return 0, fmt.Errorf("testbed: reserve port on %s: %w", ip, err)
	}
	if !c.addCloser(fd) {
		fd.Close()
		return 0, errors.New("testbed: closed while starting")
	}
	return sa.(*syscall.SockaddrInet4).Port, nil
}

// bindOnly binds a TCP socket to ip:port and does not listen. Without
// SO_REUSEADDR (which net.Listen sets), no other socket can bind the same
// address and port until it is closed, in this process or another.
func bindOnly(ip [4]byte, port int) (fdCloser, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: ip, Port: port}); err != nil {
		syscall.Close(fd)
		return 0, err
	}
	return fdCloser(fd), nil
}

type fdCloser int

func (f fdCloser) Close() error { return syscall.Close(int(f)) }

// acceptLoop serves one node until its listener is closed.
func (c *Cluster) acceptLoop(n *node, ln net.Listener) {
	defer c.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if c.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			c.logf("testbed: %s: accept: %v", n.Name, err)
			c.pause(50 * time.Millisecond) // e.g. EMFILE: do not spin
			continue
		}
		if !c.trackConn(conn) {
			conn.Close()
			return
		}
		c.wg.Add(1)
		go c.serveConn(n, conn)
	}
}

// pause sleeps for d or until the cluster closes.
func (c *Cluster) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	}
}

// startup counts a connection as starting up; with the MaxStartups fault it
// reports false, counting nothing, when that many are already starting.
func (n *node) startup() bool {
	if k := n.startups.Add(1); n.fault.MaxStartups > 0 && k > int64(n.fault.MaxStartups) {
		n.startups.Add(-1)
		return false
	}
	return true
}

// serveConn runs one client connection: handshake, then channels.
func (c *Cluster) serveConn(n *node, conn net.Conn) {
	defer c.wg.Done()
	defer c.untrackConn(conn)
	if n.fault.Hang {
		c.logf("testbed: %s: hanging connection from %s", n.Name, conn.RemoteAddr())
		io.Copy(io.Discard, conn) // until the client or Close gives up
		return
	}
	if !n.startup() {
		n.dropped.Add(1)
		c.logf("testbed: %s: dropping connection from %s: MaxStartups %d reached", n.Name, conn.RemoteAddr(), n.fault.MaxStartups)
		return
	}
	conn.SetDeadline(time.Now().Add(loginGrace))
	sc, chans, reqs, err := ssh.NewServerConn(conn, n.ssh)
	n.startups.Add(-1)
	if err != nil {
		c.logf("testbed: %s: handshake with %s: %v", n.Name, conn.RemoteAddr(), err)
		return
	}
	conn.SetDeadline(time.Time{})
	c.logf("testbed: %s: connection from %s", n.Name, conn.RemoteAddr())
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ssh.DiscardRequests(reqs)
	}()
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			c.wg.Add(1)
			go c.serveSession(n, sc, nc)
		case "direct-tcpip":
			c.wg.Add(1)
			go c.serveTunnel(n, nc)
		default:
			nc.Reject(ssh.UnknownChannelType, "testbed: only session and direct-tcpip channels")
		}
	}
}

// serveTunnel forwards a direct-tcpip channel (ssh -J, ProxyJump) to the
// address it names, as sshd does with AllowTcpForwarding yes. The client
// has authenticated as for a session.
func (c *Cluster) serveTunnel(n *node, nc ssh.NewChannel) {
	defer c.wg.Done()
	var req struct {
		Host       string
		Port       uint32
		OriginHost string
		OriginPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &req); err != nil {
		nc.Reject(ssh.Prohibited, "testbed: bad direct-tcpip request")
		return
	}
	addr := net.JoinHostPort(req.Host, strconv.Itoa(int(req.Port)))
	var d net.Dialer
	conn, err := d.DialContext(c.ctx, "tcp", addr)
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		conn.Close()
		return
	}
	c.tunnels.Add(1)
	c.logf("testbed: %s: tunnel to %s", n.Name, addr)
	go ssh.DiscardRequests(reqs)
	closeBoth := func() { conn.Close(); ch.Close() }
	stop := context.AfterFunc(c.ctx, closeBoth)
	defer stop()
	done := make(chan struct{})
	go func() {
		io.Copy(conn, ch)
		closeBoth()
		close(done)
	}()
	io.Copy(ch, conn)
	closeBoth() // either side ending ends the tunnel
	<-done
}

// HoldStartup opens a connection to the node that sends its ssh version,
// reads the server's and then says nothing: it holds one of the node's
// MaxStartups until closed, like a client stuck in its key exchange. It
// returns once the server has counted it (its banner came), or an error
// if the server dropped it.
func (c *Cluster) HoldStartup(name string) (io.Closer, error) {
	n, ok := c.Node(name)
	if !ok {
		return nil, fmt.Errorf("testbed: no node %q", name)
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(n.Addr, fmt.Sprint(n.Port)), time.Minute)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(time.Minute))
	banner := make([]byte, 4)
	_, err = conn.Write([]byte("SSH-2.0-prsh_testbed_holder\r\n"))
	if err == nil {
		_, err = io.ReadFull(conn, banner)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("testbed: %s: holding a startup: %w", name, err)
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}
