package pmix

import "prsh/modex"

// ChildJobs is the daemon's side of PMIx_Spawn. A Handler that is one
// gets each client's request, on the Handler's goroutine as its other
// upcalls; the others' clients get an error.
type ChildJobs interface {
	// ChildJob: rank parent asked for a child job; the reply carries the
	// child's namespace once its ranks have all started, or the error.
	ChildJob(parent Proc, req modex.SpawnRequest, reply *ChildJobReply)
}
