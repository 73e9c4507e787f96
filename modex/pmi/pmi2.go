package pmi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// maxValue2 is the longest value a PMI-2 client parses (after unescaping).
const maxValue2 = 1024

// pmi2Handlers are the PMI-2 commands (WIRE.md §6.4), Slurm's ring
// and our allgather (EXTENSIONS.md).
var pmi2Handlers = map[string]handler{
	"fullinit":         (*session).fullinit2,
	"job-getid":        (*session).jobid2,
	"info-getjobattr":  (*session).jobattr2,
	"kvs-put":          (*session).put2,
	"kvs-fence":        (*session).fence2,
	"kvs-get":          (*session).get2,
	"info-putnodeattr": (*session).putNodeAttr2,
	"info-getnodeattr": (*session).getNodeAttr2,
	"ring":             (*session).ring2,
	"allgather":        (*session).allgather2,
	"finalize":         (*session).finalize2,
	"abort":            (*session).abort2,
	"spawn":            (*session).spawn2,
	"name-publish":     (*session).publish2,
	"name-unpublish":   (*session).unpublish2,
	"name-lookup":      (*session).lookup2,
	"job-connect":      refuse2("job-connect-response"),
	"job-disconnect":   refuse2("job-disconnect-response"),
}

// fullinit2: the reply's rank and size are authoritative for the client;
// pmirank is only what it was started with, and not looked at: MPICH's
// client sends PMI_ID there when it is set, a secret (see Port). A
// spawned job's ranks learn that they were spawned from spawner-jobid
// being there at all.
func (s *session) fullinit2(_ context.Context, req request) (outcome, error) {
	kv := []string{"pmi-version", "2", "pmi-subversion", "0",
		"rank", strconv.Itoa(s.info.Rank), "size", strconv.Itoa(s.info.Size),
		"appnum", strconv.Itoa(s.info.AppNum)}
	if s.info.Spawner != "" {
		kv = append(kv, "spawner-jobid", s.info.Spawner)
	}
	kv = append(kv, "debugged", "FALSE", "pmiverbose", "FALSE", "rc", "0")
	return goOn, s.reply2(req, "fullinit-response", kv...)
}

func (s *session) jobid2(_ context.Context, req request) (outcome, error) {
	return goOn, s.reply2(req, "job-getid-response", "jobid", s.info.KVSName, "rc", "0")
}

// jobattr2 knows the attributes MPICH asks for. A missing one is
// found=FALSE with rc=0: "not found" is not an error in PMI-2.
func (s *session) jobattr2(_ context.Context, req request) (outcome, error) {
	key, _ := req.get("key")
	value, found := "", false
	switch key {
	case mappingKey:
		value, found = s.info.ProcessMapping, s.info.ProcessMapping != ""
	case "universeSize":
		value, found = strconv.Itoa(s.info.UniverseSize), s.info.UniverseSize > 0
	}
	return goOn, s.found2(req, "info-getjobattr-response", key, value, found)
}

func (s *session) put2(_ context.Context, req request) (outcome, error) {
	key, ok := req.get("key")
	if !ok || key == "" {
		return goOn, s.fail2(req, "kvs-put-response", "kvs-put without a key")
	}
	value, _ := req.get("value")
	if err := s.b.Put(key, value); err != nil {
		return goOn, s.fail2(req, "kvs-put-response", "put failed: "+err.Error())
	}
	return goOn, s.reply2(req, "kvs-put-response", "rc", "0")
}

// fence2 reports a failed fence to the client, unless the failure is the
// end of the connection's context.
func (s *session) fence2(ctx context.Context, req request) (outcome, error) {
	if err := s.b.Fence(ctx); err != nil {
		if ctx.Err() != nil {
			return goOn, err
		}
		return goOn, s.fail2(req, "kvs-fence-response", "fence failed: "+err.Error())
	}
	return goOn, s.reply2(req, "kvs-fence-response", "rc", "0")
}

// get2 ignores jobid and srcid: there is one job, and srcid (the rank
// that put the key, or -1) is only a routing hint.
func (s *session) get2(_ context.Context, req request) (outcome, error) {
	key, _ := req.get("key")
	value, found := s.b.Get(key)
	return goOn, s.found2(req, "kvs-get-response", key, value, found)
}

func (s *session) putNodeAttr2(_ context.Context, req request) (outcome, error) {
	key, ok := req.get("key")
	if !ok || key == "" {
		return goOn, s.fail2(req, "info-putnodeattr-response", "info-putnodeattr without a key")
	}
	value, _ := req.get("value")
	s.b.PutNodeAttr(key, value)
	return goOn, s.reply2(req, "info-putnodeattr-response", "rc", "0")
}

// getNodeAttr2 with wait=TRUE is parked in the Backend until the key is
// put on this node.
func (s *session) getNodeAttr2(ctx context.Context, req request) (outcome, error) {
	key, _ := req.get("key")
	wait, _ := req.get("wait")
	value, found := s.b.NodeAttr(ctx, key, wait == "TRUE")
	if err := ctx.Err(); err != nil {
		return goOn, err
	}
	return goOn, s.found2(req, "info-getnodeattr-response", key, value, found)
}

// ring2 is Slurm's PMIX_Ring: ring-count, ring-left, ring-right in, the
// same three out.
func (s *session) ring2(ctx context.Context, req request) (outcome, error) {
	count, err := strconv.Atoi(firstOf(req, "ring-count"))
	if err != nil {
		return goOn, s.fail2(req, "ring-response", "ring without a valid ring-count")
	}
	r, err := s.b.Ring(ctx, count, firstOf(req, "ring-left"), firstOf(req, "ring-right"))
	if err != nil {
		if ctx.Err() != nil {
			return goOn, err
		}
		return goOn, s.fail2(req, "ring-response", "ring failed: "+err.Error())
	}
	return goOn, s.reply2(req, "ring-response", "rc", "0",
		"ring-count", strconv.Itoa(r.Count), "ring-left", r.Left, "ring-right", r.Right)
}

// allgather2 is PMIX_Allgather: one value in, every rank's value out in
// rank order as their lengths and their concatenation, so that no key
// travels with each value and any byte survives (EXTENSIONS.md). The
// 6-digit length field caps the reply; a result that does not fit is an
// error for every rank alike, as all get the same values.
func (s *session) allgather2(ctx context.Context, req request) (outcome, error) {
	value, ok := req.get("value")
	if !ok {
		return goOn, s.fail2(req, "allgather-response", "allgather without a value")
	}
	values, err := s.b.Allgather(ctx, value)
	if err != nil {
		if ctx.Err() != nil {
			return goOn, err
		}
		return goOn, s.fail2(req, "allgather-response", "allgather failed: "+err.Error())
	}
	if len(values) != s.info.Size {
		return goOn, s.fail2(req, "allgather-response",
			fmt.Sprintf("allgather gave %d values for %d ranks", len(values), s.info.Size))
	}
	lengths, all := packValues(values)
	thrid, _ := req.get("thrid")
	body := body2("allgather-response", thrid, "rc", "0", "count", strconv.Itoa(len(values)),
		"lengths", lengths, "values", all)
	if len(body) > maxBody2 {
		s.log.Warn("allgather result too long for a PMI-2 frame", "bytes", len(body))
		return goOn, s.fail2(req, "allgather-response",
			fmt.Sprintf("allgather result of %d bytes exceeds the PMI-2 frame limit of %d", len(body), maxBody2))
	}
	return goOn, s.send([]byte(fmt.Sprintf("%-6d%s", len(body), body)))
}

// packValues encodes values as comma-separated byte lengths and their
// concatenation.
func packValues(values []string) (lengths, all string) {
	var ls, vs strings.Builder
	for i, v := range values {
		if i > 0 {
			ls.WriteByte(',')
		}
		ls.WriteString(strconv.Itoa(len(v)))
		vs.WriteString(v)
	}
	return ls.String(), vs.String()
}

func (s *session) finalize2(_ context.Context, req request) (outcome, error) {
	s.b.Finalize()
	return finalized, s.reply2(req, "finalize-response", "rc", "0")
}

// abort2: "abort;isworld=TRUE;msg=...", no exit code on the wire and no
// reply; MPICH's client exits 255 right after, Slurm's exits 1.
func (s *session) abort2(_ context.Context, req request) (outcome, error) {
	msg, _ := req.get("msg")
	s.abort = abortStatus(msg)
	s.log.Info("rank aborts the job", "status", s.abort, "message", msg)
	s.b.Abort(s.abort, msg)
	return aborted, nil
}

// abortStatus digs the user's code out of MPICH's message
// "application called MPI_Abort(MPI_COMM_WORLD, 7) - process 0"; 1 if
// there is none.
func abortStatus(msg string) int {
	_, call, ok := strings.Cut(msg, "MPI_Abort(")
	if !ok {
		return 1
	}
	args, _, ok := strings.Cut(call, ")")
	_, code, comma := strings.Cut(args, ",")
	if n, err := strconv.Atoi(strings.TrimSpace(code)); ok && comma && err == nil {
		return n
	}
	return 1
}

// refuse2 answers job-connect and job-disconnect, which MPICH does not
// send, with rc=1.
func refuse2(reply string) handler {
	return func(s *session, _ context.Context, req request) (outcome, error) {
		s.log.Warn("PMI-2 command refused: not supported", "cmd", req.cmd)
		return goOn, s.reply2(req, reply, "rc", "1", "errmsg", req.cmd+" is not supported")
	}
}

// found2 answers a lookup: found=TRUE with the value, or found=FALSE. A
// value longer than the client can parse is an error instead.
func (s *session) found2(req request, reply, key, value string, found bool) error {
	if !found {
		return s.reply2(req, reply, "found", "FALSE", "rc", "0")
	}
	if len(value) > maxValue2 {
		s.log.Warn("value too long for a PMI-2 reply", "key", clip(key), "length", len(value))
		return s.fail2(req, reply, "value too long for PMI-2")
	}
	return s.reply2(req, reply, "found", "TRUE", "value", value, "rc", "0")
}

// fail2 sends an error reply: rc=1 and a message.
func (s *session) fail2(req request, reply, msg string) error {
	return s.reply2(req, reply, "rc", "1", "errmsg", msg)
}
