package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/protocol"
	"prsh/modex"
	"prsh/modex/collective"
	"prsh/transport"
)

// linkEnd is one side of a link between two bare daemons: enough of a
// daemon to run a link's writer, reader and stream acceptor.
type linkEnd struct {
	d *Daemon
	l *link
}

// pair links two bare daemons with message limits maxA and maxB (0 = the
// default) and serves both ends.
func pair(t *testing.T, maxA, maxB int) (a, b linkEnd) {
	t.Helper()
	connA, ctrlA, connB, ctrlB := connected(t)
	a, b = bare(t, maxA), bare(t, maxB)
	a.l, b.l = a.d.newLink(2, connA, ctrlA), b.d.newLink(1, connB, ctrlB)
	a.d.serve(a.l)
	b.d.serve(b.l)
	return a, b
}

func bare(t *testing.T, max int) linkEnd {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return linkEnd{d: &Daemon{ctx: ctx, events: make(chan any, 64), links: map[protocol.LinkID]*link{},
		log: hclog.NewNullLogger(), maxMessage: max}}
}

// connected opens an authenticated connection over loopback and its
// control stream, as callBack and greet do.
func connected(t *testing.T) (connA *transport.Conn, ctrlA net.Conn, connB *transport.Conn, ctrlB net.Conn) {
	t.Helper()
	return connectedVia(t, func(addr string) string { return addr })
}

// connectedVia is connected with A dialing via(the listener's host:port)
// rather than the listener itself: B is the listener.
func connectedVia(t *testing.T, via func(string) string) (connA *transport.Conn, ctrlA net.Conn, connB *transport.Conn, ctrlB net.Conn) {
	t.Helper()
	secret, err := transport.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := transport.Listen("127.0.0.1:0", secret, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx := context.Background()
	if connA, err = transport.Dial(ctx, via(ln.Addr().String()), secret, transport.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { connA.Close() })
	if connB, err = ln.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { connB.Close() })
	if ctrlA, err = openStream(connA, streamControl); err != nil {
		t.Fatal(err)
	}
	if ctrlB, err = connB.Accept(); err != nil {
		t.Fatal(err)
	}
	tag := make([]byte, 1)
	if _, err := io.ReadFull(ctrlB, tag); err != nil || tag[0] != streamControl {
		t.Fatalf("control stream: tag %q, %v", tag, err)
	}
	return connA, ctrlA, connB, ctrlB
}

// next is the next message the link delivered to e's event loop, or the
// error it ended with.
func (e linkEnd) next(t *testing.T) (protocol.Message, error) {
	t.Helper()
	switch ev := (<-e.d.events).(type) {
	case received:
		return ev.msg, nil
	case linkEnded:
		return nil, ev.err
	default:
		t.Fatalf("unexpected event %T", ev)
		return nil, nil
	}
}

// puts is a fence's puts of n bytes or more in all.
func puts(n int, tag string) []modex.KV {
	var kvs []modex.KV
	for i := 0; i*1000 < n; i++ {
		kvs = append(kvs, modex.KV{Key: fmt.Sprintf("%s-%d", tag, i), Value: strings.Repeat(tag, 1000/len(tag))})
	}
	return kvs
}

func fenceDown(seq int, kvs []modex.KV) protocol.CollectiveDown {
	return protocol.CollectiveDown{ID: collective.ID{Op: collective.Fence, Seq: seq}, Part: collective.Part{KVs: kvs}}
}

func allgatherDown(seq int, values []string) protocol.CollectiveDown {
	return protocol.CollectiveDown{ID: collective.ID{Op: collective.Allgather, Seq: seq}, Part: collective.Part{Ordered: values}}
}

// A link delivers its messages in the order they were sent, whether each
// went inline or, being large, by reference with its body on the bulk
// stream: a big fence result still comes before the Teardown behind it, and
// a message may exceed the transport's frame limit.
func TestLinkKeepsOrderAcrossBulk(t *testing.T) {
	a, b := pair(t, 0, 0)
	sent := []protocol.Message{
		fenceDown(1, puts(100, "small")),
		fenceDown(2, puts(4<<20, "big")),
		protocol.Teardown{Kill: true},
		allgatherDown(1, []string{strings.Repeat("g", bulkThreshold+1)}),
		protocol.Signal{Sig: 10},
		fenceDown(3, puts(bulkThreshold, "edge")),
		protocol.CollectiveDown{ID: collective.ID{Op: collective.Ring, Seq: 1}},
		// Beyond the frame limit, which bounds only inline messages.
		allgatherDown(2, slices.Repeat([]string{strings.Repeat("v", 1<<20)}, transport.MaxFrame>>20+1)),
		protocol.Teardown{},
	}
	for _, msg := range sent {
		if err := a.l.send(msg); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range sent {
		got, err := b.next(t)
		if err != nil {
			t.Fatalf("message %d: link ended: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("message %d: got a %s, want a %s (or the contents differ)", i, nameOf(got), nameOf(want))
		}
	}
	if b.l.bulkRead == nil {
		t.Error("no message took the bulk stream")
	}
}

// Large messages cross a link both ways at once, each side's interleaved
// with small ones, and neither side waits for the other.
func TestBulkBothWays(t *testing.T) {
	a, b := pair(t, 0, 0)
	msgs := func(tag string) []protocol.Message {
		var out []protocol.Message
		for seq := 1; seq <= 4; seq++ {
			out = append(out, protocol.CollectiveUp{ID: collective.ID{Op: collective.Fence, Seq: seq}, Part: collective.Part{KVs: puts(1<<20, tag)}}, protocol.Milestone{Kind: seq % 4})
		}
		return out
	}
	for _, e := range []linkEnd{a, b} {
		for _, msg := range msgs(fmt.Sprint(e.l.peer)) {
			e.l.send(msg)
		}
	}
	for _, e := range []linkEnd{a, b} {
		for i, want := range msgs(fmt.Sprint(3 - e.l.peer)) {
			got, err := e.next(t)
			if err != nil {
				t.Fatalf("daemon %d, message %d: link ended: %v", 3-e.l.peer, i, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("daemon %d, message %d: got a %s, want a %s (or the contents differ)", 3-e.l.peer, i, nameOf(got), nameOf(want))
			}
		}
	}
}

// A message beyond the limit is refused by its sender, which drops the
// link and says why; a receiver with a lower limit refuses it too.
func TestBulkLimit(t *testing.T) {
	big := fenceDown(1, puts(2<<20, "x"))
	t.Run("sender", func(t *testing.T) {
		a, b := pair(t, 1<<20, 0)
		a.l.send(big)
		if _, err := a.next(t); err == nil || !strings.Contains(err.Error(), "FenceDown of ") ||
			!strings.Contains(err.Error(), "exceeds the 1048576-byte limit on a message") {
			t.Fatalf("the sender's link ended with %v, want the message and the limit named", err)
		}
		if msg, err := b.next(t); err == nil {
			t.Fatalf("the receiver got a %s", nameOf(msg))
		}
	})
	t.Run("receiver", func(t *testing.T) {
		a, b := pair(t, 0, 1<<20)
		a.l.send(big)
		if _, err := b.next(t); err == nil || !strings.Contains(err.Error(), "exceeds the 1048576-byte limit on a message") {
			t.Fatalf("the receiver's link ended with %v, want the limit named", err)
		}
		if _, err := a.next(t); err == nil {
			t.Fatal("the sender's link stayed up")
		}
	})
}

// A Welcome always goes inline, however large: the new orted reads it
// from the control stream before it serves any other.
func TestLargeWelcomeGoesInline(t *testing.T) {
	connA, ctrlA, _, ctrlB := connected(t)
	a := bare(t, 0)
	a.l = a.d.newLink(2, connA, ctrlA)
	hosts := strings.Split(strings.Repeat("node-with-a-long-name,", 2*bulkThreshold/20), ",")
	want := protocol.Welcome{Job: protocol.JobSpec{Hosts: hosts}, Parent: 2}
	a.l.send(want)
	got, err := readWelcome(ctrlB)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the Welcome differs")
	}
}
