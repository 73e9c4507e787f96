package daemon

import (
	"errors"
	"maps"
	"slices"

	"prsh/daemon/protocol"
)

// The name service as the ranks' PMI servers use it: requests go to
// mpirun's table (protocol/names.go) and each answer comes back to the
// callback its request left here. Every function below runs on the
// daemon's loop, and so does every callback.

// Why a name request failed; errors.Is tells them apart.
var (
	errNameNotFound  = errors.New("no such name is published")
	errNameDuplicate = errors.New("the name is published already")
	errNameTimedOut  = errors.New("timed out waiting for the name to be published")
	errNameJobEnded  = errors.New("the job ended while it waited for the name")
)

// nameCalls are this daemon's name requests in flight, by ID.
type nameCalls struct {
	last  int
	calls map[int]nameCall
}

// nameCall is one request: its rank's job, and what to do with the answer.
type nameCall struct {
	job  int
	done func([]protocol.Name, error)
}

// nameCall keeps done for the answer to a request of job's rank, and
// returns the request's ID.
func (d *Daemon) newNameCall(job int, done func([]protocol.Name, error)) int {
	if d.names.calls == nil {
		d.names.calls = map[int]nameCall{}
	}
	d.names.last++
	d.names.calls[d.names.last] = nameCall{job, done}
	return d.names.last
}

// publishNames publishes names (key → value) as rank of job, to every
// job of the mpirun; done gets nil, or errNameDuplicate when one of them
// is published already (then none is).
func (d *Daemon) publishNames(job, rank int, names map[string]string, done func(error)) {
	var list []protocol.Name
	for _, k := range slices.Sorted(maps.Keys(names)) {
		list = append(list, protocol.Name{Key: k, Value: names[k]})
	}
	d.publish(job, rank, list, false, done)
}

// publish publishes names as rank of job, to its own job only (jobOnly)
// or to every job.
func (d *Daemon) publish(job, rank int, names []protocol.Name, jobOnly bool, done func(error)) {
	id := d.newNameCall(job, func(_ []protocol.Name, err error) { done(err) })
	d.step(protocol.NamePublish{ID: id, Job: job, Rank: rank, Names: names, JobOnly: jobOnly})
}

// lookupNames looks keys up for rank of job: done gets each key's value,
// or errNameNotFound when none is published. With wait, it waits until
// every key is, or until the job ends (errNameJobEnded).
func (d *Daemon) lookupNames(job, rank int, keys []string, wait bool, done func(map[string]string, error)) {
	d.lookup(job, rank, keys, wait, 0, func(found []protocol.Name, err error) {
		values := map[string]string{}
		for _, n := range found {
			values[n.Key] = n.Value
		}
		done(values, err)
	})
}

// lookup looks keys up; with wait, for at most timeoutMS (0: no bound),
// then errNameTimedOut.
func (d *Daemon) lookup(job, rank int, keys []string, wait bool, timeoutMS int64, done func([]protocol.Name, error)) {
	id := d.newNameCall(job, done)
	d.step(protocol.NameLookup{ID: id, Job: job, Rank: rank, Keys: keys, Wait: wait, TimeoutMS: timeoutMS})
}

// unpublishNames withdraws keys (none: all) that rank of job published;
// done gets errNameNotFound when one of them was not its.
func (d *Daemon) unpublishNames(job, rank int, keys []string, done func(error)) {
	id := d.newNameCall(job, func(_ []protocol.Name, err error) { done(err) })
	d.step(protocol.NameUnpublish{ID: id, Job: job, Rank: rank, Keys: keys})
}

// namesAnswered hands mpirun's answer to its request's callback.
func (d *Daemon) namesAnswered(a protocol.NamesAnswered) {
	call, ok := d.names.calls[a.ID]
	if !ok {
		return // its job was released here
	}
	delete(d.names.calls, a.ID)
	call.done(a.Names, nameError(a.Err))
}

func nameError(why string) error {
	switch why {
	case "":
		return nil
	case protocol.NameNotFound:
		return errNameNotFound
	case protocol.NameDuplicate:
		return errNameDuplicate
	case protocol.NameTimedOut:
		return errNameTimedOut
	case protocol.NameJobEnded:
		return errNameJobEnded
	}
	return errors.New(why)
}

// releaseNames answers job's requests still in flight here, as the job
// is let go of: their callbacks must not outlive its ranks' servers.
func (d *Daemon) releaseNames(job int) {
	for _, id := range slices.Sorted(maps.Keys(d.names.calls)) {
		if call := d.names.calls[id]; call.job == job {
			delete(d.names.calls, id)
			call.done(nil, errNameJobEnded)
		}
	}
}
