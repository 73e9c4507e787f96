package pmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/hashicorp/go-hclog"
)

// The errors Serve returns are wrapped as "pmi: rank N: ...", so that
// each reads as one line naming the rank.
var (
	// ErrClosedEarly: the client closed its connection after using PMI
	// but before finalize — the process died or exited without
	// MPI_Finalize. Hydra kills the job then; so should the daemon.
	ErrClosedEarly = errors.New("connection closed before finalize")

	// ErrAborted: the client asked to abort the job (Backend.Abort was
	// called). Serve returns it once the connection is closed or ctx ends.
	ErrAborted = errors.New("aborted the job")
)

// outcome is what a request did to the conversation.
type outcome int

const (
	goOn      outcome = iota
	finalized         // the rank finalized: the conversation is over
	aborted           // the rank aborted: wait for the job to be killed
)

// session is one rank's connection.
type session struct {
	conn  net.Conn
	rd    *reader
	b     Backend
	log   hclog.Logger
	info  JobInfo
	used  bool // a request has been handled
	abort int  // exit status given to Backend.Abort

	spawning *spawnBlocks // the PMI-1 spawn blocks read so far
}

// Serve answers one rank's PMI requests on conn until the rank finalizes,
// aborts, closes the connection or ctx ends. PMI-1 and PMI-2 are told
// apart message by message (WIRE.md §1), so both protocols work on the
// same socket. Serve owns conn and closes it when it returns.
//
// It returns nil after finalize, and also when the client closed without
// having sent anything (a program that does not use PMI). Otherwise:
// ErrClosedEarly, ErrAborted (only once ctx ends or the client goes away:
// closing the socket earlier would let MPI_Abort return into the
// program), ctx's error, an error wrapping ErrProtocol for input that
// cannot be read (an over-long line, a bad frame length), or an I/O error.
// Requests that are merely unknown or malformed get an error reply and a
// log line, and the conversation goes on.
//
// Requests are answered strictly one after the other, in the order they
// arrive: Serve reads the next request only once it has written the reply
// to the one before, so a collective (kvs-fence, allgather, ring, a
// barrier) holds back everything sent after it until it completes. A
// client never has to read a reply before it sends its next request — the
// socket buffers both — which is how the non-blocking extensions work
// (Ifence, Iallgather: send the request, work, read the reply later; see
// EXTENSIONS.md). Serve cannot tell such a request from a blocking one and
// needs no rule for it; a client that sends a second collective before
// the first has completed just has it served next. The one limit is the
// socket's buffer: a reply larger than what it holds (a big allgather)
// waits in Serve's write until the client reads.
func Serve(ctx context.Context, conn net.Conn, b Backend, log hclog.Logger) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if log == nil {
		log = hclog.NewNullLogger()
	}
	info := b.Info()
	s := &session{conn: conn, rd: newReader(conn), b: b, log: log.With("rank", info.Rank), info: info}
	err := s.run(ctx)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ErrAborted) {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("pmi: rank %d: %w", info.Rank, err)
	}
	return nil
}

func (s *session) run(ctx context.Context) error {
	for {
		req, err := s.rd.next()
		if err != nil {
			return s.readFailed(err)
		}
		out, err := s.handle(ctx, req)
		if err != nil {
			return err
		}
		switch out {
		case finalized:
			return nil
		case aborted:
			return s.awaitKill()
		}
	}
}

// readFailed says what the end of the input means.
func (s *session) readFailed(err error) error {
	switch {
	case !errors.Is(err, io.EOF):
		return err
	case s.used:
		return ErrClosedEarly
	}
	return nil
}

// awaitKill holds the connection of a rank that aborted until the daemon
// has killed the job (ctx ends, which closes conn) or the process is gone.
// Whatever it still sends is ignored.
func (s *session) awaitKill() error {
	_, _ = io.Copy(io.Discard, s.rd.br)
	return fmt.Errorf("%w with status %d", ErrAborted, s.abort)
}

// handler answers one request.
type handler func(s *session, ctx context.Context, req request) (outcome, error)

func (s *session) handle(ctx context.Context, req request) (outcome, error) {
	s.used = true
	if req.bad != "" {
		s.log.Warn("malformed PMI request", "protocol", int(req.proto), "reason", req.bad)
		return goOn, s.malformed(req)
	}
	table := pmi1Handlers
	if req.proto == pmi2 {
		table = pmi2Handlers
	}
	h, ok := table[req.cmd]
	if !ok {
		s.log.Warn("unknown PMI command", "protocol", int(req.proto), "cmd", clip(req.cmd))
		return goOn, s.unknown(req)
	}
	s.log.Trace("PMI request", "protocol", int(req.proto), "cmd", req.cmd)
	return h(s, ctx, req)
}

func (s *session) malformed(req request) error {
	if req.proto == pmi2 {
		return s.send(frame2("error", "", "rc", "1", "errmsg", "malformed command: "+req.bad))
	}
	return s.reply1("error", "rc", "-1", "msg", "malformed_command")
}

// unknown answers a command we do not know in the shape its client
// expects for errors: PMI-2 "<cmd>-response" with rc (the client accepts
// any reply name that starts with the request's), PMI-1 "<cmd>_result"
// with rc, the pattern of put, get, spawn and the name service.
func (s *session) unknown(req request) error {
	name := req.cmd
	if len(name) > 64 {
		name = "error"
	}
	if req.proto == pmi2 {
		return s.reply2(req, name+"-response", "rc", "1", "errmsg", "unknown command "+name)
	}
	return s.reply1(name+"_result", "rc", "-1", "msg", "unknown_command")
}

// reply1 sends a PMI-1 reply line.
func (s *session) reply1(cmd string, kv ...string) error {
	line, ok := line1(cmd, kv...)
	if !ok {
		return fmt.Errorf("%s reply does not fit a PMI-1 line", cmd)
	}
	return s.send([]byte(line))
}

// reply2 sends a PMI-2 reply frame, echoing the request's thread id.
func (s *session) reply2(req request, cmd string, kv ...string) error {
	thrid, _ := req.get("thrid")
	return s.send(frame2(cmd, thrid, kv...))
}

// send writes one reply in a single Write.
func (s *session) send(b []byte) error {
	if _, err := s.conn.Write(b); err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	return nil
}
