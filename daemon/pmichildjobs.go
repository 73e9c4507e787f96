package daemon

import (
	"context"

	"prsh/modex"
)

// Spawn starts a child job (MPICH's MPI_Comm_spawn over PMI-1 or PMI-2)
// and returns its name (its PMI key-value space's) once its ranks have
// all started.
func (s *pmiService) Spawn(ctx context.Context, req modex.SpawnRequest) (string, error) {
	return s.askLoop(ctx, "MPI_Comm_spawn", func(d *Daemon, reply func(loopAnswer)) {
		d.requestChildJob(s.job.num, s.rank, req, func(_ int, name string, err error) { reply(loopAnswer{name, err}) })
	})
}
