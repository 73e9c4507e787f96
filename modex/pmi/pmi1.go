package pmi

import (
	"context"
	"fmt"
	"strconv"
)

// The maxima announced by get_maxes, Hydra's. From them the MPICH client
// derives an effective value length of 1024-256-64-30 = 674 (it asserts
// the result exceeds 256); announcing more for kvsname or keys would make
// it split its business cards into segments.
const (
	kvsnameMax = "256"
	keylenMax  = "64"
	vallenMax  = "1024"
)

// mappingKey is answered by the server itself; no client ever puts it.
const mappingKey = "PMI_process_mapping"

// pmi1Handlers are the PMI-1 commands (WIRE.md §4.3). The PMI-2
// client's opening init line comes here too.
var pmi1Handlers = map[string]handler{
	"init":              (*session).init1,
	"initack":           (*session).initack1,
	"get_maxes":         (*session).maxes1,
	"get_appnum":        (*session).appnum1,
	"get_my_kvsname":    (*session).kvsname1,
	"get_universe_size": (*session).universe1,
	"get":               (*session).get1,
	"put":               (*session).put1,
	"barrier_in":        (*session).barrier1,
	"finalize":          (*session).finalize1,
	"abort":             (*session).abort1,
	"spawn":             (*session).spawn1,
	"publish_name":      (*session).publish1,
	"unpublish_name":    (*session).unpublish1,
	"lookup_name":       (*session).lookup1,
}

// init1 accepts PMI version 1 (any subversion) and 2.0, whose client
// opens with this line before switching to frames. The client checks
// only cmd and rc.
func (s *session) init1(_ context.Context, req request) (outcome, error) {
	switch v, _ := req.get("pmi_version"); v {
	case "1":
		return goOn, s.reply1("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "0")
	case "2":
		return goOn, s.reply1("response_to_init", "pmi_version", "2", "pmi_subversion", "0", "rc", "0")
	default:
		s.log.Warn("unsupported PMI version", "pmi_version", clip(v))
		return goOn, s.reply1("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "-1")
	}
}

// initack is the PMI_PORT + PMI_ID handshake: four lines at once. The rank
// is ours, whatever pmiid says: on a Port, the port checked it before
// Serve got the connection. pmiid is a secret there, never logged.
func (s *session) initack1(context.Context, request) (outcome, error) {
	lines := "cmd=initack\ncmd=set size=" + strconv.Itoa(s.info.Size) +
		"\ncmd=set rank=" + strconv.Itoa(s.info.Rank) + "\ncmd=set debug=0\n"
	return goOn, s.send([]byte(lines))
}

func (s *session) maxes1(context.Context, request) (outcome, error) {
	return goOn, s.reply1("maxes", "kvsname_max", kvsnameMax, "keylen_max", keylenMax, "vallen_max", vallenMax)
}

func (s *session) appnum1(context.Context, request) (outcome, error) {
	return goOn, s.reply1("appnum", "appnum", strconv.Itoa(s.info.AppNum))
}

func (s *session) kvsname1(context.Context, request) (outcome, error) {
	return goOn, s.reply1("my_kvsname", "kvsname", s.info.KVSName)
}

// universe1 answers -1, Hydra's "unlimited", when the size is unknown.
func (s *session) universe1(context.Context, request) (outcome, error) {
	size := s.info.UniverseSize
	if size <= 0 {
		size = -1
	}
	return goOn, s.reply1("universe_size", "size", strconv.Itoa(size))
}

// get1 answers at once. A value the client could not read back in one
// line is refused rather than sent: an over-long reply desynchronises
// every later reply of the connection.
func (s *session) get1(_ context.Context, req request) (outcome, error) {
	key, _ := req.get("key")
	value, found := s.lookup(key)
	if !found {
		return goOn, s.reply1("get_result", "rc", "-1", "msg", "key_"+clip(key)+"_not_found", "value", "unknown")
	}
	if _, ok := line1("get_result", "rc", "0", "msg", "success", "value", value); !ok {
		s.log.Warn("value too long for a PMI-1 reply", "key", clip(key), "length", len(value))
		return goOn, s.reply1("get_result", "rc", "-1", "msg", "value_too_long_for_PMI-1", "value", "unknown")
	}
	return goOn, s.reply1("get_result", "rc", "0", "msg", "success", "value", value)
}

// lookup reads a key: the mapping from JobInfo, the rest from the store.
func (s *session) lookup(key string) (string, bool) {
	if key == mappingKey {
		return s.info.ProcessMapping, s.info.ProcessMapping != ""
	}
	return s.b.Get(key)
}

func (s *session) put1(_ context.Context, req request) (outcome, error) {
	key, ok := req.get("key")
	if !ok || key == "" {
		return goOn, s.reply1("put_result", "rc", "-1", "msg", "put_without_key")
	}
	value, _ := req.get("value")
	if err := s.b.Put(key, value); err != nil {
		s.log.Warn("put failed", "key", clip(key), "error", err)
		return goOn, s.reply1("put_result", "rc", "-1", "msg", "put_failed")
	}
	return goOn, s.reply1("put_result", "rc", "0", "msg", "success")
}

// barrier1 has no way to report failure (barrier_out has no rc): a
// failed fence ends the connection, and with it the rank's MPI_Init.
func (s *session) barrier1(ctx context.Context, _ request) (outcome, error) {
	if err := s.b.Fence(ctx); err != nil {
		return goOn, fmt.Errorf("fence: %w", err)
	}
	return goOn, s.reply1("barrier_out")
}

func (s *session) finalize1(context.Context, request) (outcome, error) {
	s.b.Finalize()
	return finalized, s.reply1("finalize_ack")
}

// abort1: "cmd=abort exitcode=N", and no reply ever.
func (s *session) abort1(_ context.Context, req request) (outcome, error) {
	s.abort = 1
	if code, err := strconv.Atoi(firstOf(req, "exitcode")); err == nil {
		s.abort = code
	}
	msg := firstOf(req, "message", "msg")
	s.log.Info("rank aborts the job", "status", s.abort, "message", msg)
	s.b.Abort(s.abort, msg)
	return aborted, nil
}

// firstOf returns the value of the first of keys the request carries.
func firstOf(req request, keys ...string) string {
	for _, k := range keys {
		if v, ok := req.get(k); ok {
			return v
		}
	}
	return ""
}
