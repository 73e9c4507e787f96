package daemon

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"

	"prsh/daemon/protocol"
	"prsh/transport"
)

// Large messages (a fence's puts at large p) travel on a bulk stream of
// their own rather than in a control frame: the control stream carries a
// small reference in the message's place, and the reader takes the body
// from the bulk stream before it reads the next control frame. So the
// link's order holds, the control stream's frames stay small, and a
// message is bounded by maxMessage rather than by the frame limit.
// daemon/protocol/PROTOCOL.md ("Large messages") is the wire rule.
const (
	// bulkThreshold is the largest payload that goes inline.
	bulkThreshold = 64 << 10
	// maxMessage bounds one message's payload, sent or received: far
	// beyond any real job's fence, it stops a runaway before it takes
	// the node's memory.
	maxMessage = 1 << 30
	// bulkRef is the kind byte of a reference frame; no message has it.
	bulkRef byte = 0
)

var welcomeKind, _ = protocol.KindOf(protocol.Welcome{})

// badMessage is a peer's breach of the protocol, which drops its link.
type badMessage struct{ error }

// oversize is a message of ours over the limit: this side's fault, the
// link's real cause of loss, unlike a write that fails because the peer
// or the session went away (the job's normal end among them).
type oversize struct{ error }

// write encodes msg and writes it, inline or by reference.
func (l *link) write(msg protocol.Message) error {
	kind, payload, err := protocol.Encode(msg)
	if err != nil {
		return err
	}
	// The new orted reads its Welcome before it serves any other stream.
	if len(payload) <= bulkThreshold || kind == welcomeKind {
		return transport.WriteFrame(l.ctrl, kind, payload)
	}
	if len(payload) > l.maxMessage {
		return oversize{fmt.Errorf("%s of %d bytes exceeds the %d-byte limit on a message", nameOf(msg), len(payload), l.maxMessage)}
	}
	if l.bulkOut == nil {
		if l.bulkOut, err = openStream(l.conn, streamBulk); err != nil {
			return err
		}
	}
	if err := transport.WriteFrame(l.ctrl, bulkRef, reference(kind, len(payload))); err != nil {
		return err
	}
	_, err = l.bulkOut.Write(payload)
	return err
}

// read reads the next message, taking its body from the bulk stream when
// the control stream has a reference in its place.
func (l *link) read() (protocol.Message, error) {
	kind, payload, err := transport.ReadFrame(l.ctrl, transport.MaxFrame)
	if err != nil {
		return nil, err
	}
	if kind == bulkRef {
		if kind, payload, err = l.readBulk(payload); err != nil {
			return nil, err
		}
	}
	msg, err := protocol.Decode(kind, payload)
	if err != nil {
		return nil, badMessage{err}
	}
	return msg, nil
}

// reference is the payload of a reference frame: the message's kind and
// the length of its body on the bulk stream.
func reference(kind byte, n int) []byte {
	return binary.BigEndian.AppendUint64([]byte{kind}, uint64(n))
}

func (l *link) readBulk(ref []byte) (byte, []byte, error) {
	if len(ref) != 9 {
		return 0, nil, badMessage{fmt.Errorf("bulk reference of %d bytes, want 9", len(ref))}
	}
	kind, n := ref[0], binary.BigEndian.Uint64(ref[1:])
	if n > uint64(l.maxMessage) {
		return 0, nil, badMessage{fmt.Errorf("message of %d bytes exceeds the %d-byte limit on a message", n, l.maxMessage)}
	}
	bulk, err := l.bulkStream()
	if err != nil {
		return 0, nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(bulk, body); err != nil {
		return 0, nil, fmt.Errorf("reading a %d-byte message from the bulk stream: %w", n, err)
	}
	return kind, body, nil
}

// bulkStream is the peer's bulk stream, waited for the first time: the
// peer opens it just before its first reference, so it may come later.
func (l *link) bulkStream() (net.Conn, error) {
	if l.bulkRead == nil {
		select {
		case l.bulkRead = <-l.bulkIn:
		case <-l.conn.Done():
			return nil, net.ErrClosed
		}
	}
	return l.bulkRead, nil
}

// nameOf names a message in an error a user may read: a collective by
// its operation ("FenceUp"), as the wire named it before the collectives
// shared one message pair.
func nameOf(msg protocol.Message) string {
	switch m := msg.(type) {
	case protocol.CollectiveUp:
		return upper(m.ID.Op.String()) + "Up"
	case protocol.CollectiveDown:
		return upper(m.ID.Op.String()) + "Down"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "protocol.")
}

func upper(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
