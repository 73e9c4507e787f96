package daemon

import (
	"context"
	"errors"
	"fmt"

	"prsh/modex/pmi"
)

// A PMI-1 or PMI-2 rank's name service (MPICH's MPI_Publish_name,
// MPI_Lookup_name, MPI_Unpublish_name): its service hands the call to the
// loop, which asks mpirun's name service (names.go), and waits for the
// answer as it waits for a fence.

// pmiNameCall is the driver event of a PMI rank's call to the name
// service: ask runs on the loop and answers once, through reply.
type pmiNameCall struct {
	service *pmiService
	ask     func(d *Daemon, reply func(nameAnswer))
	answer  chan nameAnswer
}

// nameAnswer is the name service's answer: a looked-up port, or why not.
type nameAnswer struct {
	port string
	err  error
}

// Publish makes service name port, for every job of the mpirun.
func (s *pmiService) Publish(ctx context.Context, service, port string) error {
	_, err := s.callNames(ctx, "MPI_Publish_name", func(d *Daemon, reply func(nameAnswer)) {
		d.publishNames(s.job.num, s.rank, map[string]string{service: port}, func(err error) { reply(nameAnswer{err: err}) })
	})
	return err
}

// Lookup answers at once with the port published as service, or
// pmi.ErrNotPublished: MPICH's clients never wait for a publish.
func (s *pmiService) Lookup(ctx context.Context, service string) (string, error) {
	port, err := s.callNames(ctx, "MPI_Lookup_name", func(d *Daemon, reply func(nameAnswer)) {
		d.lookupNames(s.job.num, s.rank, []string{service}, false, func(found map[string]string, err error) {
			port, ok := found[service]
			if err == nil && !ok || errors.Is(err, errNameNotFound) {
				err = pmi.ErrNotPublished
			}
			reply(nameAnswer{port, err})
		})
	})
	return port, err
}

// Unpublish withdraws service, which this rank published.
func (s *pmiService) Unpublish(ctx context.Context, service string) error {
	_, err := s.callNames(ctx, "MPI_Unpublish_name", func(d *Daemon, reply func(nameAnswer)) {
		d.unpublishNames(s.job.num, s.rank, []string{service}, func(err error) { reply(nameAnswer{err: err}) })
	})
	return err
}

// callNames posts ask to the loop and waits for its answer or ctx's end.
func (s *pmiService) callNames(ctx context.Context, what string, ask func(d *Daemon, reply func(nameAnswer))) (string, error) {
	answer := make(chan nameAnswer, 1)
	if !s.d.post(pmiNameCall{s, ask, answer}) {
		return "", fmt.Errorf("%s: the daemon is ending", what)
	}
	select {
	case a := <-answer:
		if a.err != nil && !errors.Is(a.err, pmi.ErrNotPublished) {
			return "", fmt.Errorf("%s: %w", what, a.err)
		}
		return a.port, a.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// pmiNamesWanted runs a PMI rank's call to the name service on the loop.
func (d *Daemon) pmiNamesWanted(e pmiNameCall) {
	if !d.waiting(e.service) {
		e.answer <- nameAnswer{err: errors.New("the job is over")}
		return
	}
	e.ask(d, func(a nameAnswer) { e.answer <- a }) // buffered, answered once: never blocks the loop
}
