package protocol

import (
	"maps"
	"slices"
)

// The name service (MPI_Publish_name, MPI_Lookup_name, PMIx_Publish,
// PMIx_Lookup and PMIx_Unpublish, PMI's publish_name): one table at
// mpirun, which every daemon's request reaches along the routing
// topology and whose answer travels back the same way. A name is seen by
// its own job only, or by every job of the mpirun (a DVM's jobs, a job
// and the jobs it spawned); a lookup may wait until its keys are
// published, for at most its timeout, and never beyond its job's end. A
// job's names go when it ends.

// Name is one published key, its value and its owner (job and rank).
// A value of bytes rather than text (a PMIx byte object, which Open MPI
// publishes in its connect) is Bytes instead, which JSON carries whole.
type Name struct {
	Key, Value string
	Bytes      []byte // null for a string value, "" (base64) for an empty byte object
	Job, Rank  int
}

// Why a name request failed (NameReply.Err).
const (
	NameNotFound  = "not found"
	NameDuplicate = "already published"
	NameTimedOut  = "timed out"
	NameJobEnded  = "its job ended"
)

// NamePublish publishes Names as rank Rank of job Job, for request ID
// of daemon From: to its own job only (JobOnly) or to every job. Stepped
// at the daemon of the rank (From unset: the machine fills it in), it is
// the request; it travels to mpirun along the routing topology.
type NamePublish struct {
	ID, From, Job, Rank int
	Names               []Name
	JobOnly             bool `json:",omitempty"`
}

// NameLookup looks Keys up for rank Rank of job Job. Wait: until every
// key is published, for at most TimeoutMS (0: until the job ends).
type NameLookup struct {
	ID, From, Job, Rank int
	Keys                []string
	Wait                bool  `json:",omitempty"`
	TimeoutMS           int64 `json:",omitempty"`
}

// NameUnpublish withdraws Keys (none: every name) that rank Rank of job
// Job published.
type NameUnpublish struct {
	ID, From, Job, Rank int
	Keys                []string
}

// NameReply answers daemon To's name request ID: the names found, or
// Err (one of the Name* reasons).
type NameReply struct {
	ID, To int
	Names  []Name `json:",omitempty"`
	Err    string `json:",omitempty"`
}

// NamesAnswered: the answer to this daemon's name request ID.
type NamesAnswered struct {
	ID    int
	Names []Name
	Err   string
}

func (NamePublish) message()   {}
func (NameLookup) message()    {}
func (NameUnpublish) message() {}
func (NameReply) message()     {}

func (NamePublish) event()   {}
func (NameLookup) event()    {}
func (NameUnpublish) event() {}

func (NamesAnswered) action() {}

// nameScope is where a name is seen: a job, or every job (AllJobs).
type nameKey struct {
	scope int
	key   string
}

// nameService is mpirun's table and the lookups waiting on it.
type nameService struct {
	names   map[nameKey]Name
	waiting map[int]NameLookup // by serial, the LookupTimer's ID
	serial  int
}

// nameRequest takes a request of a rank here or of another daemon:
// mpirun serves it, any other daemon passes it on.
func (m *Machine) nameRequest(msg Message) {
	if m.root == nil {
		m.deliver(m.router.Route(0, msg))
		return
	}
	ns := m.root.nameService()
	switch r := msg.(type) {
	case NamePublish:
		m.nameReply(ns.publish(r))
		for _, reply := range ns.serveWaiting(m) {
			m.nameReply(reply)
		}
	case NameLookup:
		if reply, ok := ns.lookup(m, r); ok {
			m.nameReply(reply)
		}
	case NameUnpublish:
		m.nameReply(ns.unpublish(r))
	}
}

// stepName is a local rank's name request: this daemon is its From.
func (m *Machine) stepName(ev Event) {
	switch r := ev.(type) {
	case NamePublish:
		r.From = m.self
		m.nameRequest(r)
	case NameLookup:
		r.From = m.self
		m.nameRequest(r)
	case NameUnpublish:
		r.From = m.self
		m.nameRequest(r)
	}
}

// nameReply hands an answer to the driver, or passes it on toward the
// daemon that asked.
func (m *Machine) nameReply(r NameReply) {
	if r.To != m.self {
		m.deliver(m.router.Route(r.To, r))
		return
	}
	m.emit(NamesAnswered{ID: r.ID, Names: r.Names, Err: r.Err})
}

func (r *rootState) nameService() *nameService {
	if r.names == nil {
		r.names = &nameService{names: map[nameKey]Name{}, waiting: map[int]NameLookup{}}
	}
	return r.names
}

// publish stores every name, or none when one is taken in its scope.
func (ns *nameService) publish(r NamePublish) NameReply {
	scope := AllJobs
	if r.JobOnly {
		scope = r.Job
	}
	for _, n := range r.Names {
		if _, taken := ns.names[nameKey{scope, n.Key}]; taken {
			return NameReply{ID: r.ID, To: r.From, Err: NameDuplicate}
		}
	}
	for _, n := range r.Names {
		ns.names[nameKey{scope, n.Key}] = Name{Key: n.Key, Value: n.Value, Bytes: n.Bytes, Job: r.Job, Rank: r.Rank}
	}
	return NameReply{ID: r.ID, To: r.From}
}

// find is what r's job sees of its keys: its own job's names first.
func (ns *nameService) find(r NameLookup) []Name {
	var found []Name
	for _, k := range r.Keys {
		if n, ok := ns.names[nameKey{r.Job, k}]; ok {
			found = append(found, n)
		} else if n, ok := ns.names[nameKey{AllJobs, k}]; ok {
			found = append(found, n)
		}
	}
	return found
}

// lookup answers r, or keeps it until its keys are all published (and
// sets its timer); false: it waits.
func (ns *nameService) lookup(m *Machine, r NameLookup) (NameReply, bool) {
	found := ns.find(r)
	switch {
	case len(found) == len(r.Keys) || (!r.Wait && len(found) > 0):
		return NameReply{ID: r.ID, To: r.From, Names: found}, true
	case !r.Wait:
		return NameReply{ID: r.ID, To: r.From, Err: NameNotFound}, true
	}
	ns.serial++
	ns.waiting[ns.serial] = r
	if r.TimeoutMS > 0 {
		m.emit(SetTimer{Timer{Kind: LookupTimer, ID: ns.serial}, r.TimeoutMS})
	}
	return NameReply{}, false
}

// serveWaiting answers the waiting lookups whose keys are all published
// now, oldest first.
func (ns *nameService) serveWaiting(m *Machine) []NameReply {
	var out []NameReply
	for _, s := range slices.Sorted(maps.Keys(ns.waiting)) {
		r := ns.waiting[s]
		if found := ns.find(r); len(found) == len(r.Keys) {
			out = append(out, ns.drop(m, s, NameReply{ID: r.ID, To: r.From, Names: found}))
		}
	}
	return out
}

// drop lets go of waiting lookup s, which reply answers.
func (ns *nameService) drop(m *Machine, s int, reply NameReply) NameReply {
	if ns.waiting[s].TimeoutMS > 0 {
		m.emit(CancelTimer{Timer{Kind: LookupTimer, ID: s}})
	}
	delete(ns.waiting, s)
	return reply
}

// unpublish withdraws r's keys that its rank published; any other key
// makes the answer NameNotFound (the rest are withdrawn all the same).
func (ns *nameService) unpublish(r NameUnpublish) NameReply {
	reply := NameReply{ID: r.ID, To: r.From}
	owned := func(k nameKey) bool { n, ok := ns.names[k]; return ok && n.Job == r.Job && n.Rank == r.Rank }
	if len(r.Keys) == 0 {
		for k := range ns.names {
			if owned(k) {
				delete(ns.names, k)
			}
		}
		return reply
	}
	for _, key := range r.Keys {
		gone := false
		for _, k := range []nameKey{{r.Job, key}, {AllJobs, key}} {
			if owned(k) {
				delete(ns.names, k)
				gone = true
			}
		}
		if !gone {
			reply.Err = NameNotFound
		}
	}
	return reply
}

// lookupTimedOut answers waiting lookup s: its keys did not all come.
func (m *Machine) lookupTimedOut(s int) {
	if m.root == nil || m.root.names == nil {
		return
	}
	ns := m.root.names
	if r, ok := ns.waiting[s]; ok {
		delete(ns.waiting, s)
		m.nameReply(NameReply{ID: r.ID, To: r.From, Err: NameTimedOut})
	}
}

// namesOfJobEnded drops job's names at mpirun and answers its lookups
// still waiting: nothing of a job outlives it.
func (m *Machine) namesOfJobEnded(job int) {
	if m.root == nil || m.root.names == nil {
		return
	}
	ns := m.root.names
	for k, n := range ns.names {
		if n.Job == job {
			delete(ns.names, k)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(ns.waiting)) {
		if r := ns.waiting[s]; r.Job == job {
			m.nameReply(ns.drop(m, s, NameReply{ID: r.ID, To: r.From, Err: NameJobEnded}))
		}
	}
}
