package daemon

import (
	"os"
	"syscall"
)

// signal delivers a signal to every rank in this subtree: down the spawn
// tree, then to the local ranks' process groups. With Ack, the subtree
// answers once every daemon in it has delivered it.
func (d *Daemon) signal(s Signal) {
	d.acks, d.ackWait = map[int]bool{}, s.Ack
	for _, c := range d.children {
		if c.connected && !c.linkDown {
			c.link.send(s)
			d.acks[c.id] = true
		}
	}
	for _, r := range d.ranks {
		if !r.reaped && r.cmd != nil && r.cmd.Process != nil {
			syscall.Kill(-r.cmd.Process.Pid, syscall.Signal(s.Sig))
		}
	}
	d.checkAcks()
}

func (d *Daemon) acked(child int) {
	delete(d.acks, child)
	d.checkAcks()
}

func (d *Daemon) checkAcks() {
	if !d.ackWait || len(d.acks) > 0 {
		return
	}
	d.ackWait = false
	if d.isRoot() {
		d.stopSelf()
		return
	}
	d.parent.send(SignalAck{})
}

// stopSelf stops mpirun after its ranks, as Ctrl-Z asks; fg or bg sends it
// SIGCONT, which it passes on to the ranks.
func (d *Daemon) stopSelf() {
	if d.ending || !d.stopPending {
		return
	}
	d.stopPending = false
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}
