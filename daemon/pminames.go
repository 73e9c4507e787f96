package daemon

import (
	"context"
	"errors"
	"fmt"

	"prsh/modex/pmi"
)

// A PMI-1 or PMI-2 rank's requests that mpirun answers (MPICH's
// MPI_Comm_spawn, pmichildjobs.go, and its name service here:
// MPI_Publish_name, MPI_Lookup_name, MPI_Unpublish_name): the rank's
// service hands the call to the loop, which asks mpirun, and waits for
// the answer as it waits for a fence.

// pmiLoopCall is the driver event of such a call: ask runs on the loop
// and answers once, through reply.
type pmiLoopCall struct {
	service *pmiService
	ask     func(d *Daemon, reply func(loopAnswer))
	answer  chan loopAnswer
}

// loopAnswer is mpirun's answer: a value (a child job's name, a
// looked-up port), or why not.
type loopAnswer struct {
	value string
	err   error
}

// Publish makes service name port, for every job of the mpirun.
func (s *pmiService) Publish(ctx context.Context, service, port string) error {
	_, err := s.askLoop(ctx, "MPI_Publish_name", func(d *Daemon, reply func(loopAnswer)) {
		d.publishNames(s.job.num, s.rank, map[string]string{service: port}, func(err error) { reply(loopAnswer{err: err}) })
	})
	return err
}

// Lookup answers at once with the port published as service, or
// pmi.ErrNotPublished: MPICH's clients never wait for a publish.
func (s *pmiService) Lookup(ctx context.Context, service string) (string, error) {
	port, err := s.askLoop(ctx, "MPI_Lookup_name", func(d *Daemon, reply func(loopAnswer)) {
		d.lookupNames(s.job.num, s.rank, []string{service}, false, func(found map[string]string, err error) {
			port, ok := found[service]
			if err == nil && !ok || errors.Is(err, errNameNotFound) {
				err = pmi.ErrNotPublished
			}
			reply(loopAnswer{port, err})
		})
	})
	return port, err
}

// Unpublish withdraws service, which this rank published.
func (s *pmiService) Unpublish(ctx context.Context, service string) error {
	_, err := s.askLoop(ctx, "MPI_Unpublish_name", func(d *Daemon, reply func(loopAnswer)) {
		d.unpublishNames(s.job.num, s.rank, []string{service}, func(err error) { reply(loopAnswer{err: err}) })
	})
	return err
}

// askLoop posts ask to the loop and waits for its answer or ctx's end.
// Meanwhile the rank counts as waiting, as in a fence: if it ends, its
// PMI server is stopped at once.
func (s *pmiService) askLoop(ctx context.Context, what string, ask func(d *Daemon, reply func(loopAnswer))) (string, error) {
	answer := make(chan loopAnswer, 1)
	if !s.d.post(pmiLoopCall{s, ask, answer}) {
		return "", fmt.Errorf("%s: the daemon is ending", what)
	}
	s.waiting.Store(true)
	defer s.waiting.Store(false)
	select {
	case a := <-answer:
		if a.err != nil && !errors.Is(a.err, pmi.ErrNotPublished) {
			return "", fmt.Errorf("%s: %w", what, a.err)
		}
		return a.value, a.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// pmiLoopCallWanted runs a PMI rank's call on the loop.
func (d *Daemon) pmiLoopCallWanted(e pmiLoopCall) {
	if !d.waiting(e.service) {
		e.answer <- loopAnswer{err: errors.New("the job is over")}
		return
	}
	e.ask(d, func(a loopAnswer) { e.answer <- a }) // buffered, answered once: never blocks the loop
}
