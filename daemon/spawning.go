package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"prsh/errmgr"
	"prsh/spawn"
	"prsh/spawn/launch"
	"prsh/transport"
)

// helloTimeout bounds how long an accepted connection may take to say who
// it is.
const helloTimeout = 10 * time.Second

// child is a direct child in the spawn tree, from launch to exit.
type child struct {
	id         int
	host       string
	proc       launch.Process
	link       *link
	timer      *time.Timer
	connected  bool
	failed     bool
	why        string // what failed, worded for the user
	procDone   bool
	linkDown   bool
	outputs    int  // output streams open
	outputSeen bool // an output stream was opened and closed
}

// drained says the child is gone and everything it sent has been passed on.
func (c *child) drained() bool {
	return c.procDone && c.outputs == 0 && (c.outputSeen || !c.connected || c.linkDown)
}

func (d *Daemon) startPhase1(nodes []spawn.Node) {
	acts, err := d.phase1.Start(nodes)
	if err != nil {
		d.fail(d.failure(errmgr.StatusFailed, "%v", err))
		return
	}
	d.do(acts)
}

// do carries out phase 1's actions.
func (d *Daemon) do(acts []spawn.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case spawn.SpawnNode:
			d.spawnChild(a.Node)
		case spawn.SendSubtree:
			d.children[a.To].link.send(Welcome{Job: d.job, Nodes: a.Nodes, Parent: d.cfg.ID})
		case spawn.Complete:
			d.reach(Spawned)
		case spawn.Skip:
			d.skip(a.Node.ID)
		}
	}
}

func (d *Daemon) spawnChild(n spawn.Node) {
	c := &child{id: n.ID, host: n.Host}
	d.children[n.ID] = c
	argv, stdin := d.ortedArgv(n.ID, n.Host), d.secretLine()
	go func() {
		proc, err := d.agent.Launch(d.ctx, n.Host, argv, stdin)
		if !d.postOr(func() { d.launched(c, proc, err) }) && proc != nil {
			proc.Close()
		}
	}()
}

// postOr posts f and reports whether the loop took it.
func (d *Daemon) postOr(f func()) bool {
	select {
	case d.events <- f:
		return true
	case <-d.ctx.Done():
		return false
	}
}

func (d *Daemon) launched(c *child, proc launch.Process, err error) {
	if err != nil {
		c.procDone = true
		d.spawnFailed(c, d.failureAt(c.host, errmgr.StatusFailed, "%s", launchFailure(err)))
		d.maybeFinish()
		return
	}
	c.proc = proc
	go func() {
		err := proc.Wait()
		d.post(func() { d.childExited(c, err) })
	}()
	if d.ending {
		go proc.Close()
		return
	}
	c.timer = time.AfterFunc(d.callbackTimeout(), func() { d.post(func() { d.callbackExpired(c) }) })
}

func (d *Daemon) callbackTimeout() time.Duration {
	if d.job.CallbackMS > 0 {
		return time.Duration(d.job.CallbackMS) * time.Millisecond
	}
	return 30 * time.Second
}

func (d *Daemon) callbackExpired(c *child) {
	if c.connected || c.failed || c.procDone {
		return
	}
	d.spawnFailed(c, d.failureAt(c.host, errmgr.StatusFailed, "orted started but did not call back within %v (it was told to call %s)", d.callbackTimeout(), d.addr))
	go c.proc.Close()
}

// spawnFailed handles a child that never came up: the job is aborted, or
// with --on-unreachable skip the child is left out and its children are
// adopted.
func (d *Daemon) spawnFailed(c *child, f Failure) {
	c.failed = true
	c.why = f.Msg
	acts := d.phase1.Failed(c.id)
	if !d.job.SkipUnreachable {
		d.fail(f)
	}
	d.do(acts)
	d.checkAllMilestones()
}

// skip replaces a skipped child by its children in phase 2 and tells
// mpirun.
func (d *Daemon) skip(id int) {
	c := d.children[id]
	d.report(Skipped{ID: id, Msg: c.why})
	sends, fresh, err := d.gather.Skip(id, d.spawnTree.Children(id))
	if err != nil {
		d.log.Warn("phase 2", "error", err)
		return
	}
	d.afterGather(sends, fresh)
}

func (d *Daemon) childExited(c *child, err error) {
	c.procDone = true
	if c.timer != nil {
		c.timer.Stop()
	}
	if !d.ending && !c.failed {
		if !c.connected {
			d.spawnFailed(c, d.failureAt(c.host, errmgr.StatusFailed, "orted exited before calling back: %v", orOK(err)))
		} else {
			c.failed = true
			d.fail(d.failureAt(c.host, errmgr.StatusFailed, "orted exited unexpectedly: %v", orOK(err)))
		}
	}
	d.maybeFinish()
}

// launchFailure words an error from Launch. An orted that ends before its
// launch payload is written fails Launch with its exit status; that is the
// same event as an exit after the write, so it reads the same.
func launchFailure(err error) string {
	var xe *launch.ExitError
	if errors.As(err, &xe) {
		return fmt.Sprintf("orted exited before calling back: %v", err)
	}
	return err.Error()
}

func orOK(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

func (d *Daemon) acceptLoop() {
	for {
		conn, err := d.ln.Accept(d.ctx)
		if err != nil {
			return
		}
		go d.greet(conn)
	}
}

// greet reads an accepted connection's Hello and hands it to the loop.
func (d *Daemon) greet(conn *transport.Conn) {
	timer := time.AfterFunc(helloTimeout, func() { conn.Close() })
	defer timer.Stop()
	ctrl, err := conn.Accept()
	if err != nil {
		conn.Close()
		return
	}
	hello, err := readHello(ctrl)
	if err != nil {
		d.log.Warn("dropping connection without hello", "peer", conn.RemoteAddr().String(), "error", err)
		conn.Close()
		return
	}
	timer.Stop()
	if !d.postOr(func() { d.hello(conn, ctrl, hello) }) {
		conn.Close()
	}
}

func readHello(ctrl net.Conn) (Hello, error) {
	var tag [1]byte
	if _, err := ctrl.Read(tag[:]); err != nil {
		return Hello{}, err
	}
	if tag[0] != streamControl {
		return Hello{}, fmt.Errorf("first stream is not a control stream")
	}
	kind, payload, err := transport.ReadFrame(ctrl, transport.MaxFrame)
	if err != nil {
		return Hello{}, err
	}
	if kind != kindHello {
		return Hello{}, fmt.Errorf("expected hello, got message kind %d", kind)
	}
	return decodeAs[Hello](payload)
}

// hello registers a daemon that connected: a spawn child calling back, or
// a routing neighbour.
func (d *Daemon) hello(conn *transport.Conn, ctrl net.Conn, h Hello) {
	l := newLink(h.ID, conn, ctrl)
	if c, ok := d.children[h.ID]; ok && !c.connected {
		d.childConnected(c, l)
		return
	}
	if h.ID < 0 || h.ID >= d.job.Daemons || h.ID == d.cfg.ID {
		d.log.Warn("dropping connection with a bad daemon id", "id", h.ID)
		l.close()
		return
	}
	if _, ok := d.links[h.ID]; !ok {
		d.links[h.ID] = l
	}
	go d.readLoop(l)
	go d.acceptStreams(l)
}

func (d *Daemon) childConnected(c *child, l *link) {
	if c.failed || d.ending {
		l.close()
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	acts, err := d.phase1.Connected(c.id)
	if err != nil {
		d.log.Warn("unexpected call back", "daemon", c.id, "error", err)
		l.close()
		return
	}
	c.connected, c.link = true, l
	d.links[c.id] = l
	d.fanout.AddChild(c.id, func() (io.WriteCloser, error) { return openStream(l.conn, streamInput) })
	go d.readLoop(l)
	go d.acceptStreams(l)
	d.do(acts)
}

// dialPeer connects to a routing neighbour that has no link yet and sends
// what was routed to it once connected.
func (d *Daemon) dialPeer(id int, msg any) {
	d.dialing[id] = append(d.dialing[id], msg)
	if len(d.dialing[id]) > 1 {
		return
	}
	addr, _ := d.gather.Lookup(id)
	go func() {
		l, err := d.dial(id, addr)
		if !d.postOr(func() { d.dialed(id, addr, l, err) }) && l != nil {
			l.close()
		}
	}()
}

func (d *Daemon) dial(id int, addr string) (*link, error) {
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, addr, d.cfg.Secret, d.transportOptions())
	if err != nil {
		return nil, err
	}
	ctrl, err := openStream(conn, streamControl)
	if err != nil {
		conn.Close()
		return nil, err
	}
	l := newLink(id, conn, ctrl)
	l.send(Hello{ID: d.cfg.ID, Addr: d.addr})
	return l, nil
}

func (d *Daemon) dialed(id int, addr string, l *link, err error) {
	queued := d.dialing[id]
	delete(d.dialing, id)
	if err != nil {
		d.fail(d.failure(errmgr.StatusFailed, "cannot reach the orted of %s at %s: %v", d.hostOf(id), addr, err))
		return
	}
	if existing, ok := d.links[id]; ok {
		l.close()
		l = existing
	} else {
		d.links[id] = l
		go d.readLoop(l)
		go d.acceptStreams(l)
	}
	for _, m := range queued {
		l.send(m)
	}
}
