package daemon

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"prsh/daemon/protocol"
	"prsh/ranks"
	"prsh/spawn/agent"
)

// The driver's own events: what a goroutine saw, with the handles (a
// link, a process) that the machine never holds. handle turns each into
// a protocol event once the handle is stored.
type (
	accepted struct {
		conn Session
		ctrl net.Conn
		peer int
	}
	dialled struct {
		peer int
		conn Session
		ctrl net.Conn
		err  error
	}
	spawned struct {
		id   int
		proc agent.Process
		err  error
	}
	received struct {
		link *link
		msg  protocol.Message
	}
	linkEnded struct {
		link   *link
		err    error
		silent bool // the peer stopped answering
	}
	outputOpened struct{ link *link }
	outputClosed struct {
		link *link
		err  error
	}
	// rankReport is what became of a rank of job.
	rankReport struct {
		job int
		ev  ranks.Event
	}
	timerExpired struct {
		timer protocol.Timer
		t     *timer
	}
)

// handle takes one event from the loop's queue.
func (d *Daemon) handle(ev any) {
	switch e := ev.(type) {
	case protocol.Event:
		d.step(e)
	case accepted:
		d.linkUp(d.newLink(e.peer, e.conn, e.ctrl))
	case dialled:
		if e.err != nil {
			d.step(protocol.DialFailed{Peer: e.peer, Err: d.explain(e.err).Error()})
			return
		}
		d.linkUp(d.newLink(e.peer, e.conn, e.ctrl))
	case spawned:
		d.spawned(e)
	case received:
		d.step(protocol.Received{Link: e.link.id, Msg: e.msg})
	case linkEnded:
		delete(d.links, e.link.id)
		d.log.Debug("link ended", "daemon", e.link.peer, "error", e.err)
		d.step(protocol.LinkDown{Link: e.link.id, Err: e.err.Error(), Silent: e.silent})
	case outputOpened:
		d.step(protocol.OutputOpened{Link: e.link.id})
	case outputClosed:
		if e.err != nil {
			d.log.Debug("output stream broke", "daemon", e.link.peer, "error", e.err)
		}
		d.step(protocol.OutputClosed{Link: e.link.id})
	case rankReport:
		if _, ok := d.jobs[e.job]; ok { // a released job's are stale
			d.rankEvent(e.job, e.ev)
		}
	case clientSubmitted, clientSignalled, clientStopping, clientGone, outputEnded, outputBacklog:
		d.clientEvent(e)
	case fenceWait:
		d.fenceEntered(e)
	case ringWait:
		d.ringEntered(e)
	case allgatherWait:
		d.allgatherEntered(e)
	case pmixUpcall:
		d.pmixEvent(e)
	case pmixFence:
		d.pmixFenceEntered(e.fence)
	case pmixDirectModex:
		d.pmixDirectModex(e)
	case pmixChildJob:
		d.pmixChildJob(e)
	case pmiLoopCall:
		d.pmiLoopCallWanted(e)
	case pmixDynamic:
		d.pmixDynamicCall(e)
	case tripwireHit:
		d.tripwireHit(e)
	case timerExpired:
		if d.timers[e.timer] == e.t { // not cancelled or set again since
			delete(d.timers, e.timer)
			if e.timer.Kind == protocol.DrainTimer && d.stillDraining(e.timer) {
				return
			}
			d.step(protocol.TimerFired{Timer: e.timer})
		}
	default:
		d.log.Error("unknown event", "type", fmt.Sprintf("%T", ev))
	}
}

// linkUp tells the machine about a new link, then serves it unless the
// machine closed it at once.
func (d *Daemon) linkUp(l *link) {
	d.step(protocol.LinkUp{Link: l.id, Peer: l.peer})
	if _, open := d.links[l.id]; open {
		d.serve(l)
	}
}

func (d *Daemon) spawned(e spawned) {
	if e.err != nil {
		d.step(protocol.SpawnFailed{ID: e.id, Err: spawnFailure(d.explain(e.err))})
		return
	}
	d.procs[e.id] = e.proc
	go func() {
		err := e.proc.Wait()
		c, ok := e.proc.(agent.Cancellable)
		d.post(protocol.DaemonExited{ID: e.id, Err: sessionEnd(orOK(err)), Orphaned: orphaned(err), Cancelled: ok && c.Cancelled()})
	}()
	go func() {
		select {
		case <-e.proc.Alive():
			d.post(protocol.DaemonAlive{ID: e.id})
		case <-d.ctx.Done():
		}
	}()
	d.step(protocol.SpawnStarted{ID: e.id})
}

// carry does what the machine asked, in order. Nothing here blocks: slow
// work goes to goroutines that post their results back.
func (d *Daemon) carry(acts []protocol.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case protocol.Send:
			if l, ok := d.links[a.Link]; ok {
				if err := l.send(a.Msg); err != nil {
					d.log.Debug("send", "daemon", l.peer, "error", err)
				}
			}
		case protocol.Dial:
			d.dial(a.Peer, a.Addr)
		case protocol.CloseLink:
			if l, ok := d.links[a.Link]; ok {
				delete(d.links, a.Link)
				l.close()
			}
		case protocol.Spawn:
			d.spawn(a.Node)
		case protocol.SpawnStep:
			d.spawnStep(a.Nodes)
		case protocol.StopDaemon:
			if p, ok := d.procs[a.ID]; ok && a.Kill {
				go p.Kill()
			} else if ok {
				go p.Close()
			}
		case protocol.ForwardInput:
			if l, ok := d.links[a.Link]; ok {
				d.stdinTree.AddChild(a.Child, func() (io.WriteCloser, error) { return openStream(l.conn, streamInput) })
			}
		case protocol.StageTo:
			if l, ok := d.links[a.Link]; ok {
				go d.sendStage(a.Child, l)
			}
		case protocol.StartRanks:
			d.startRanks(a.App, a.Ranks)
		case protocol.SignalRanks:
			d.signalRanks(syscall.Signal(a.Sig), a.Job)
		case protocol.SetTimer:
			d.setTimer(a.Timer, time.Duration(a.MS)*time.Millisecond)
		case protocol.CancelTimer:
			if t, ok := d.timers[a.Timer]; ok {
				t.Stop()
				delete(d.timers, a.Timer)
			}
		case protocol.Print:
			if a.Job != 0 && d.dvm != nil {
				d.jobLine(a)
			} else {
				fmt.Fprintln(d.cfg.Stderr, a.Line)
			}
		case protocol.DVMUp, protocol.JobDone, protocol.JobStopped, protocol.DaemonsLost:
			if d.dvm != nil { // mpirun of a DVM only
				d.dvmAction(a)
			}
		case protocol.ReleaseJob:
			d.releaseJob(a.Job)
			d.releaseAcross(a.Job)
			d.releasePMIx(a.Job)
		case protocol.Warn:
			d.log.Warn(a.Line)
		case protocol.Waiting:
			d.showWaiting(a.Line)
		case protocol.Reached:
			d.reached[a.Kind], d.reachedAt[a.Kind] = true, d.clock.Now().Sub(d.cfg.Start)
			if a.Kind == protocol.Started && a.Job != 0 && d.dvm != nil {
				d.jobInput(a.Job)
			}
		case protocol.ForwardStdin:
			d.forwardStdin()
		case protocol.StopSelf:
			d.cfg.StopSelf()
		case protocol.FenceDone:
			if a.Group == "" { // a group's fence is PMIx's only
				d.fenceDone(a)
			}
			d.pmixFenceDone(a)
		case protocol.RingDone:
			d.ringDone(a)
		case protocol.AllgatherDone:
			d.allgatherDone(a)
		case protocol.PlaceChildJob:
			d.placeChildJob(a)
		case protocol.ChildJobAnswered:
			d.childJobAnswered(a)
		case protocol.ServeModex:
			d.serveModex(a)
		case protocol.ModexAnswered:
			d.modexAnswered(a)
		case protocol.NamesAnswered:
			d.namesAnswered(a)
		case protocol.Exit:
			d.finish(a)
		default:
			d.log.Error("unknown action", "type", fmt.Sprintf("%T", a))
		}
	}
}

// showWaiting shows mpirun's launch progress, or takes it away ("").
func (d *Daemon) showWaiting(line string) {
	switch {
	case d.cfg.Waiting == nil:
	case line == "":
		d.cfg.Waiting.Clear()
	default:
		d.cfg.Waiting.Show(line)
	}
}

// stillDraining sets the drain timer again when output came within its
// span: the bound is on a stalled end, not a long one, so a slow machine
// or reader that still takes the ranks' output is waited for.
func (d *Daemon) stillDraining(t protocol.Timer) bool {
	span := ms(d.cfg.Timeouts.DrainMS)
	idle := d.terminal.Idle()
	if idle >= span {
		return false
	}
	d.setTimer(t, span-idle)
	return true
}

// timer is one machine timer; the event it posts names it, so that one
// cancelled or set again after it fired is recognised and ignored.
type timer struct{ Timer }

func (d *Daemon) setTimer(id protocol.Timer, after time.Duration) {
	if old, ok := d.timers[id]; ok {
		old.Stop()
	}
	t := &timer{}
	arm := d.clock.AfterFunc
	if id.Kind == protocol.JobTimer {
		arm = d.clock.WallAfterFunc
	}
	t.Timer = arm(after, func() { d.post(timerExpired{id, t}) })
	d.timers[id] = t
}

// spawnFailure words an error from the agent's Start. An orted that ends
// before its payload is written fails Start with its exit status; that is
// the same event as an exit after the write, so it reads the same.
func spawnFailure(err error) string {
	if errors.As(err, new(*agent.ExitError)) {
		return "orted exited before calling back: " + sessionEnd(err)
	}
	return err.Error()
}

// preVersionOrted is what an orted built before protocol versions (1)
// says of the --protocol flag; newer ones name both versions themselves.
const preVersionOrted = "flag provided but not defined: -protocol"

// sessionEnd words how a child's session ended, with the reason an orted
// of an older prsh gives in its own words put in ours.
func sessionEnd(err error) string {
	var xe *agent.ExitError
	if !errors.As(err, &xe) || !strings.Contains(xe.Stderr, preVersionOrted) {
		return err.Error()
	}
	older := *xe
	older.Stderr = fmt.Sprintf("it is an orted of an older prsh (protocol version 1; its parent's is %d): install the same prsh on every node", protocol.Version)
	return older.Error()
}

// orphaned says a session ended with an orted's exit on a lost lifeline.
func orphaned(err error) bool {
	var xe *agent.ExitError
	return errors.As(err, &xe) && xe.Signal == "" && xe.Status == protocol.OrphanStatus
}

func orOK(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}
