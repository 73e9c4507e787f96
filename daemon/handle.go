package daemon

import (
	"prsh/errmgr"
	"prsh/routed"
)

// handle dispatches a message from a neighbour.
func (d *Daemon) handle(l *link, msg any) {
	switch m := msg.(type) {
	case Addrs:
		d.gotAddrs(l.peer, m.Entries)
	case Launch:
		d.receiveLaunch(m)
	case Failure:
		if d.isChild(l.peer) {
			d.fail(m)
		}
	case Milestone:
		if d.isChild(l.peer) && m.Kind >= 0 && m.Kind < numMilestones {
			d.progress[m.Kind].children[l.peer] = true
			d.checkMilestone(m.Kind)
		}
	case Teardown:
		if l == d.parent {
			d.teardown(m.Kill)
		}
	case Signal:
		if l == d.parent {
			d.signal(m)
		}
	case SignalAck:
		if d.isChild(l.peer) {
			d.acked(l.peer)
		}
	case Skipped:
		if d.isChild(l.peer) {
			d.report(m)
		}
	default:
		d.log.Warn("unexpected message", "daemon", l.peer, "type", msg)
	}
}

func (d *Daemon) isChild(id int) bool {
	c, ok := d.children[id]
	return ok && c.connected
}

func (d *Daemon) startPhase2() {
	d.sendAddrs(d.gather.Start())
	d.checkAddressed()
}

func (d *Daemon) gotAddrs(from int, entries []routed.Entry) {
	sends, fresh, err := d.gather.Receive(from, entries)
	if err != nil {
		d.log.Warn("phase 2", "error", err)
		return
	}
	d.afterGather(sends, fresh)
}

// afterGather sends what phase 2 asks for and releases the messages that
// were waiting for the addresses just learned.
func (d *Daemon) afterGather(sends []routed.Send, fresh []routed.Entry) {
	d.sendAddrs(sends)
	ids := make([]int, len(fresh))
	for i, e := range fresh {
		ids[i] = e.ID
	}
	d.deliver(d.router.Learned(ids...))
	d.checkAddressed()
}

func (d *Daemon) sendAddrs(sends []routed.Send) {
	for _, s := range sends {
		if l, ok := d.links[s.To]; ok {
			l.send(Addrs{Entries: s.Entries})
		}
	}
}

func (d *Daemon) checkAddressed() {
	if d.gather.Complete() && !d.progress[Addressed].local {
		d.reach(Addressed)
	}
}

// receiveLaunch is phase 3: pass the launch on along the routing topology,
// then start the local ranks.
func (d *Daemon) receiveLaunch(app Launch) {
	if d.launchGot {
		return
	}
	d.launchGot = true
	d.app = app
	d.fanout.SetRanks(app.RankNode)
	for _, c := range d.routing.Fanout(d.cfg.ID) {
		d.deliver(d.router.Neighbour(c, app))
	}
	d.startRanks(app)
}

// deliver sends what the router released. A broadcast for a skipped
// daemon goes to the daemons it would have passed it to.
func (d *Daemon) deliver(ds []routed.Delivery[any]) {
	for _, dl := range ds {
		if l, ok := d.links[dl.Via]; ok {
			l.send(dl.Msg)
		} else if addr, _ := d.gather.Lookup(dl.Via); addr == "" {
			for _, next := range d.routing.Fanout(dl.Via) {
				d.deliver(d.router.Neighbour(next, dl.Msg))
			}
		} else {
			d.dialPeer(dl.Via, dl.Msg)
		}
	}
}

// linkDown handles a link that ended.
func (d *Daemon) linkDown(l *link, err error) {
	if d.links[l.peer] == l {
		delete(d.links, l.peer)
	}
	if l == d.parent {
		if !d.finished {
			d.lifelineLost("lost the link to its parent")
		}
		return
	}
	c, ok := d.children[l.peer]
	if !ok || c.link != l {
		return
	}
	c.linkDown = true
	if !d.ending && !c.failed {
		c.failed = true
		d.fail(d.failureAt(c.host, errmgr.StatusFailed, "lost the link to its orted: %v", err))
	}
	d.maybeFinish()
}
