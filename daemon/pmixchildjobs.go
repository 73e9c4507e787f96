package daemon

import (
	"prsh/daemon/protocol"
	"prsh/modex"
	"prsh/modex/pmix"
)

// A PMIx client's PMIx_Spawn (Open MPI's MPI_Comm_spawn): the library's
// upcall becomes a request for a child job, answered with the child's
// namespace once its ranks have all started.

// pmixChildJob is the driver event of a client's PMIx_Spawn.
type pmixChildJob struct {
	parent pmix.Proc
	req    modex.SpawnRequest
	reply  *pmix.ChildJobReply
}

func (u pmixUpcalls) ChildJob(p pmix.Proc, req modex.SpawnRequest, r *pmix.ChildJobReply) {
	u.d.post(pmixChildJob{p, req, r})
}

// pmixChildJob asks mpirun for the child job of a rank's PMIx_Spawn.
func (d *Daemon) pmixChildJob(e pmixChildJob) {
	j := d.pmixJobOf(e.parent.Namespace)
	if j == nil {
		e.reply.Send("", pmix.ErrFailed)
		return
	}
	d.log.Info("PMIx_Spawn", "namespace", e.parent.Namespace, "rank", e.parent.Rank, "request", e.req)
	d.requestChildJob(j.job, e.parent.Rank, e.req, func(child int, name string, err error) {
		if err != nil {
			d.log.Info("PMIx_Spawn refused", "rank", e.parent.Rank, "error", err)
		}
		e.reply.Send(name, err)
	})
}

// pmixParent is the rank whose spawn started app, for its namespace's
// job info; nil for a job mpirun started.
func pmixParent(app protocol.Launch) *pmix.Proc {
	if app.Parent == nil {
		return nil
	}
	return &pmix.Proc{Namespace: app.Parent.Name, Rank: app.Parent.Rank}
}
