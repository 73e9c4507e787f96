package sim

import (
	"fmt"
	"strings"

	"prsh/daemon/protocol"
	"prsh/modex"
)

// The name service and fences over several jobs, driven by a scenario:
// a rank's request is stepped at its daemon as the PMIx server would.

// Publish makes rank of job, at daemon id, publish key=value now, as
// its request reqID.
func (s *Sim) Publish(id, reqID, job, rank int, key, value string, jobOnly bool) {
	s.tracef("d%d <- publish #%d %s=%s by job %d rank %d job-only=%v", id, reqID, key, value, job, rank, jobOnly)
	s.step(s.d[id], protocol.NamePublish{ID: reqID, Job: job, Rank: rank,
		Names: []protocol.Name{{Key: key, Value: value}}, JobOnly: jobOnly})
}

// Lookup makes rank of job, at daemon id, look keys up now.
func (s *Sim) Lookup(id, reqID, job, rank int, keys []string, wait bool, timeoutMS int64) {
	s.tracef("d%d <- lookup #%d %v by job %d rank %d wait=%v timeout=%dms", id, reqID, keys, job, rank, wait, timeoutMS)
	s.step(s.d[id], protocol.NameLookup{ID: reqID, Job: job, Rank: rank, Keys: keys, Wait: wait, TimeoutMS: timeoutMS})
}

// Unpublish makes rank of job, at daemon id, withdraw keys now.
func (s *Sim) Unpublish(id, reqID, job, rank int, keys []string) {
	s.tracef("d%d <- unpublish #%d %v by job %d rank %d", id, reqID, keys, job, rank)
	s.step(s.d[id], protocol.NameUnpublish{ID: reqID, Job: job, Rank: rank, Keys: keys})
}

// EnterAcross makes rank of job, at daemon id, enter a fence over the
// group of several jobs named group ("1:0-1|2:0") now, with one key.
func (s *Sim) EnterAcross(id, job, rank int, group string) error {
	var jobs []protocol.JobRanks
	for _, field := range strings.Split(group, "|") {
		num, list, _ := strings.Cut(field, ":")
		ranks, ok := protocol.GroupRanks(list, 1<<20)
		var n int
		if _, err := fmt.Sscan(num, &n); err != nil || !ok {
			return fmt.Errorf("%q is not a group over several jobs", group)
		}
		jobs = append(jobs, protocol.JobRanks{Job: n, Ranks: ranks})
	}
	s.tracef("d%d <- job %d rank %d enters the fence over %s", id, job, rank, group)
	kv := modex.KV{Key: fmt.Sprintf("across-%d-%d", job, rank), Value: "v"}
	s.step(s.d[id], protocol.FenceEntered{Job: job, Rank: rank, Puts: []modex.KV{kv}, Across: jobs})
	return nil
}

// Finalize makes rank of job, at daemon id, finalise PMI now (as a
// scenario's rank that took part in fences of its own does).
func (s *Sim) Finalize(id, job, rank int) {
	s.tracef("d%d <- job %d rank %d finalizes", id, job, rank)
	s.step(s.d[id], protocol.PMIFinalize{Job: job, Rank: rank})
}
