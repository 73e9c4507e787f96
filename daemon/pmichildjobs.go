package daemon

import (
	"context"
	"errors"
	"fmt"

	"prsh/modex"
)

// A PMI-1 or PMI-2 rank's spawn (MPICH's MPI_Comm_spawn): its service
// asks the loop for a child job and waits for the answer, as it waits
// for a fence.

// pmiChildJob is the driver event of a PMI rank's spawn.
type pmiChildJob struct {
	service *pmiService
	req     modex.SpawnRequest
	answer  chan childAnswer
}

// childAnswer is mpirun's answer to a spawn: the child's name, or why not.
type childAnswer struct {
	name string
	err  error
}

// Spawn starts a child job and returns its name (its PMI key-value
// space's) once its ranks have all started.
func (s *pmiService) Spawn(ctx context.Context, req modex.SpawnRequest) (string, error) {
	answer := make(chan childAnswer, 1)
	if !s.d.post(pmiChildJob{s, req, answer}) {
		return "", errors.New("the daemon is ending")
	}
	s.waiting.Store(true)
	defer s.waiting.Store(false)
	select {
	case a := <-answer:
		if a.err != nil {
			return "", fmt.Errorf("MPI_Comm_spawn: %w", a.err)
		}
		return a.name, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// pmiChildJobWanted asks mpirun for a PMI rank's child job.
func (d *Daemon) pmiChildJobWanted(e pmiChildJob) {
	if !d.waiting(e.service) {
		e.answer <- childAnswer{err: errors.New("the job is over")}
		return
	}
	d.requestChildJob(e.service.job.num, e.service.rank, e.req, func(_ int, name string, err error) {
		e.answer <- childAnswer{name, err} // buffered: never blocks the loop
	})
}
