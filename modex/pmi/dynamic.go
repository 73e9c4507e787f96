package pmi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The handlers of MPI_Comm_spawn and of the name service
// (MPI_Publish_name, MPI_Lookup_name, MPI_Unpublish_name) in both
// dialects (WIRE.md §9, §4.3, §6.4). The Backend does the work; these
// read the requests and give every outcome the reply its client reads as
// success or failure.

// spawn1 collects the mcmd=spawn blocks of one request and answers once,
// after the last (spawnssofar = totspawns). A block without a usable
// position is answered at once: nothing tells whether more will come.
func (s *session) spawn1(ctx context.Context, req request) (outcome, error) {
	total, sofar, err := blockPosition(req)
	if err != nil {
		s.spawning = nil
		return goOn, s.spawnFailed1(err)
	}
	if sofar == 1 {
		s.spawning = &spawnBlocks{total: total}
	}
	sb := s.spawning
	if sb == nil || sb.total != total || sb.seen+1 != sofar {
		s.spawning = nil
		return goOn, s.spawnFailed1(fmt.Errorf("block %d of %d out of order", sofar, total))
	}
	if sb.add(req.items); sofar < total {
		return goOn, nil
	}
	s.spawning = nil
	if sb.bad != nil {
		return goOn, s.spawnFailed1(sb.bad)
	}
	if _, err := s.b.Spawn(ctx, sb.req); err != nil {
		if ctx.Err() != nil {
			return goOn, err
		}
		return goOn, s.spawnFailed1(err)
	}
	return goOn, s.spawned1(rankCount(sb.req))
}

// spawned1 reports success with one error code per rank started, all 0;
// when they do not fit the line, without them (the client then assumes
// zeros).
func (s *session) spawned1(n int) error {
	codes := strings.TrimSuffix(strings.Repeat("0,", n), ",")
	if _, ok := line1("spawn_result", "rc", "0", "errcodes", codes); ok {
		return s.reply1("spawn_result", "rc", "0", "errcodes", codes)
	}
	return s.reply1("spawn_result", "rc", "0")
}

func (s *session) spawnFailed1(err error) error {
	s.log.Warn("MPI_Comm_spawn failed", "error", err)
	return s.reply1("spawn_result", "rc", "-1", "msg", msg1(err))
}

// msg1 makes an error a PMI-1 msg value: no spaces (the line would split
// there), and short enough for the reply line.
func msg1(err error) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return '_'
		}
		return r
	}, clip(err.Error()))
}

// spawn2 answers a failure WITHOUT rc: MPICH's and Slurm's clients ignore
// rc's value in spawn-response (rc=1 counts as success, and the parent
// waits for children that never come), but fail on a reply without rc.
func (s *session) spawn2(ctx context.Context, req request) (outcome, error) {
	sr, err := spawnRequest2(req.items)
	if err != nil {
		return goOn, s.spawnFailed2(req, "malformed spawn: "+err.Error())
	}
	name, err := s.b.Spawn(ctx, sr)
	if err != nil {
		if ctx.Err() != nil {
			return goOn, err
		}
		return goOn, s.spawnFailed2(req, "spawn failed: "+err.Error())
	}
	return goOn, s.reply2(req, "spawn-response", "rc", "0", "jobid", name, "nerrs", "0")
}

func (s *session) spawnFailed2(req request, msg string) error {
	s.log.Warn("MPI_Comm_spawn failed", "error", msg)
	return s.reply2(req, "spawn-response", "errmsg", msg)
}

// publish1: "cmd=publish_name service=S port=P".
func (s *session) publish1(ctx context.Context, req request) (outcome, error) {
	service, port := firstOf(req, "service"), firstOf(req, "port")
	if service == "" {
		return goOn, s.reply1("publish_result", "rc", "1", "msg", "publish_without_service")
	}
	if err := s.b.Publish(ctx, service, port); err != nil {
		return s.nameFailed1(ctx, "publish_result", err)
	}
	return goOn, s.reply1("publish_result", "rc", "0", "msg", "success")
}

// unpublish1: "cmd=unpublish_name service=S".
func (s *session) unpublish1(ctx context.Context, req request) (outcome, error) {
	service := firstOf(req, "service")
	if service == "" {
		return goOn, s.reply1("unpublish_result", "rc", "1", "msg", "unpublish_without_service")
	}
	if err := s.b.Unpublish(ctx, service); err != nil {
		return s.nameFailed1(ctx, "unpublish_result", err)
	}
	return goOn, s.reply1("unpublish_result", "rc", "0", "msg", "success")
}

// lookup1: "cmd=lookup_name service=S", answered with port=P last.
func (s *session) lookup1(ctx context.Context, req request) (outcome, error) {
	service := firstOf(req, "service")
	if service == "" {
		return goOn, s.reply1("lookup_result", "rc", "1", "msg", "lookup_without_service")
	}
	port, err := s.b.Lookup(ctx, service)
	if err != nil {
		return s.nameFailed1(ctx, "lookup_result", err)
	}
	if _, ok := line1("lookup_result", "rc", "0", "msg", "success", "port", port); !ok || strings.Contains(port, " ") {
		s.log.Warn("port name unfit for a PMI-1 reply", "service", clip(service), "length", len(port))
		return goOn, s.reply1("lookup_result", "rc", "1", "msg", "port_unfit_for_PMI-1")
	}
	return goOn, s.reply1("lookup_result", "rc", "0", "msg", "success", "port", port)
}

// nameFailed1 reports a name-service failure with rc=1; "not found" in
// Hydra's words.
func (s *session) nameFailed1(ctx context.Context, reply string, err error) (outcome, error) {
	if ctx.Err() != nil {
		return goOn, err
	}
	s.logNameFailure(reply, err)
	msg := msg1(err)
	if errors.Is(err, ErrNotPublished) {
		msg = "service_not_found"
	}
	return goOn, s.reply1(reply, "rc", "1", "msg", msg)
}

// publish2: "name-publish;name=S;port=P;infokeycount=0" (the info is
// ignored, as every server does).
func (s *session) publish2(ctx context.Context, req request) (outcome, error) {
	name, port := firstOf(req, "name"), firstOf(req, "port")
	if name == "" {
		return goOn, s.fail2(req, "name-publish-response", "name-publish without a name")
	}
	if err := s.b.Publish(ctx, name, port); err != nil {
		return s.nameFailed2(ctx, req, "name-publish-response", err)
	}
	return goOn, s.reply2(req, "name-publish-response", "rc", "0")
}

func (s *session) unpublish2(ctx context.Context, req request) (outcome, error) {
	name := firstOf(req, "name")
	if name == "" {
		return goOn, s.fail2(req, "name-unpublish-response", "name-unpublish without a name")
	}
	if err := s.b.Unpublish(ctx, name); err != nil {
		return s.nameFailed2(ctx, req, "name-unpublish-response", err)
	}
	return goOn, s.reply2(req, "name-unpublish-response", "rc", "0")
}

// lookup2 gives the port twice: MPICH's client reads port, Slurm's
// libpmi2 reads value.
func (s *session) lookup2(ctx context.Context, req request) (outcome, error) {
	const reply = "name-lookup-response"
	name := firstOf(req, "name")
	if name == "" {
		return goOn, s.reply2(req, reply, "found", "FALSE", "rc", "1", "errmsg", "name-lookup without a name")
	}
	port, err := s.b.Lookup(ctx, name)
	if err != nil {
		return s.nameFailed2(ctx, req, reply, err)
	}
	if len(port) > maxValue2 {
		return goOn, s.reply2(req, reply, "found", "FALSE", "rc", "1", "errmsg",
			"port name of "+strconv.Itoa(len(port))+" bytes too long for PMI-2")
	}
	return goOn, s.reply2(req, reply, "port", port, "value", port, "found", "TRUE", "rc", "0")
}

func (s *session) nameFailed2(ctx context.Context, req request, reply string, err error) (outcome, error) {
	if ctx.Err() != nil {
		return goOn, err
	}
	s.logNameFailure(reply, err)
	if reply == "name-lookup-response" {
		return goOn, s.reply2(req, reply, "found", "FALSE", "rc", "1", "errmsg", err.Error())
	}
	return goOn, s.fail2(req, reply, err.Error())
}

// logNameFailure: a name not (yet) published is routine, programs poll
// for it; any other failure is worth a line on the user's terminal.
func (s *session) logNameFailure(reply string, err error) {
	if errors.Is(err, ErrNotPublished) {
		s.log.Info("name service request failed", "reply", reply, "error", err)
		return
	}
	s.log.Warn("name service request failed", "reply", reply, "error", err)
}
