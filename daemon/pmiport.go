package daemon

import (
	"io"
	"net"

	"prsh/daemon/protocol"
	"prsh/modex/pmi"
)

// speaker is which of a rank's connections speaks for it: the socket it
// inherited (PMI_FD) or one it opened on the daemon's PMI_PORT. Whichever
// sends something first is the rank's PMI connection for good (its
// finalize, abort and fences count); the other is closed unheard.
type speaker int32

const (
	nobodyYet    speaker = iota
	viaInherited         // the socket in PMI_FD
	viaPort              // a connection on PMI_PORT that presented the rank's PMI_ID
	nobody               // the rank ended without speaking: no one may claim it now
)

func (s *pmiService) speaker() speaker { return speaker(s.speaks.Load()) }

// claim makes via the rank's PMI connection if none is yet.
func (s *pmiService) claim(via speaker) bool {
	return s.speaks.CompareAndSwap(int32(nobodyYet), int32(via))
}

// seal ends the claims of a rank that has ended and returns who spoke.
func (s *pmiService) seal() speaker {
	s.speaks.CompareAndSwap(int32(nobodyYet), int32(nobody))
	return s.speaker()
}

// claimingConn is a rank's inherited PMI socket: its first bytes make it
// the rank's PMI connection, unless a PMI_PORT connection already is.
// Serve reads it from one goroutine.
type claimingConn struct {
	net.Conn
	s       *pmiService
	claimed bool
}

func (c *claimingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.claimed {
		if !c.s.claim(viaInherited) {
			return 0, io.EOF
		}
		c.claimed = true
	}
	return n, err
}

// openPMIPort opens the daemon's PMI_PORT for its ranks. Without it the
// ranks still have PMI_FD: a failure is a warning, not the job's end.
func (d *Daemon) openPMIPort(localRanks int) {
	if localRanks == 0 || d.pmiPort != nil {
		return
	}
	port, err := pmi.ListenPort(d.log.Named("pmi-port"))
	if err != nil {
		d.log.Warn("ranks get no PMI_PORT", "error", err)
		return
	}
	d.pmiPort = port
	go func() {
		if err := port.Serve(d.ctx); err != nil {
			d.post(protocol.CannotContinue{Err: "cannot accept the ranks' PMI_PORT connections: " + d.explain(err).Error()})
		}
	}()
}

// pmiPortEnv gives rank r an id on the PMI_PORT: PMI_PORT and PMI_ID for
// its environment, nothing without a port.
func (d *Daemon) pmiPortEnv(r *rank) []string {
	if d.pmiPort == nil {
		return nil
	}
	id, err := d.pmiPort.Expect(func(conn net.Conn) { d.servePMIPort(conn, r) })
	if err != nil {
		d.log.Warn("rank gets no PMI_PORT", "rank", r.id, "error", err)
		return nil
	}
	r.portID = id
	return []string{"PMI_PORT=" + d.pmiPort.Addr(), "PMI_ID=" + id}
}

// servePMIPort serves a connection that presented rank r's PMI_ID, if no
// other connection speaks for the rank.
func (d *Daemon) servePMIPort(conn net.Conn, r *rank) {
	if !r.pmi.claim(viaPort) {
		d.log.Warn("PMI_PORT connection refused: the rank has its PMI connection", "rank", r.id)
		conn.Close()
		return
	}
	d.log.Debug("the rank's PMI connection is on PMI_PORT", "rank", r.id)
	defer close(r.portDone)
	d.runPMI(conn, r, viaPort)
}

// forgetPMIPortID withdraws the id of a rank that has ended.
func (d *Daemon) forgetPMIPortID(r *rank) {
	if d.pmiPort != nil && r.portID != "" {
		d.pmiPort.Forget(r.portID)
	}
}

// pmiNeverStarted ends the PMI service of a rank that did not start.
func (d *Daemon) pmiNeverStarted(r *rank) {
	r.pmi.seal()
	r.pmi.stop()
	d.forgetPMIPortID(r)
	close(r.pmiDone)
}
