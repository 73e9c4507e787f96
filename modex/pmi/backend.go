package pmi

import (
	"context"
	"errors"

	"prsh/modex"
)

// JobInfo is what a rank learns about its job at start-up. The daemon
// fills it from the job map; Serve reads it once, when it starts.
type JobInfo struct {
	Rank   int // this connection's rank in MPI_COMM_WORLD
	Size   int // number of ranks in the job
	AppNum int // MPI_APPNUM: index of this rank's app context, 0 for a plain launch

	// KVSName names the job's key-value space. PMI-1 clients echo it in
	// every put and get (the servers ignore it); PMI-2 clients receive it
	// as the job id and pass it back in kvs-get. Any text without spaces
	// or semicolons.
	KVSName string

	// UniverseSize is MPI_UNIVERSE_SIZE, usually the number of slots. Zero
	// or less means "not available": PMI-1 then answers -1 and PMI-2 says
	// the universeSize attribute is absent.
	UniverseSize int

	// ProcessMapping is the PMI_process_mapping value, built with
	// modex.ProcessMapping. "" means unknown: PMI-1 clients then exchange
	// host names instead, PMI-2 clients with two ranks or more fail in
	// MPI_Init.
	ProcessMapping string

	// Spawner is the KVSName of the job whose MPI_Comm_spawn started this
	// one, "" for a job mpirun started. PMI-2 clients learn it as
	// spawner-jobid in fullinit-response; PMI-1 clients learn that they
	// were spawned from their environment (SpawnedEnv), and both read the
	// spawner's preput keys (PARENT_ROOT_PORT_NAME) from their own job's
	// key-value space, which the daemon fills before they start.
	Spawner string
}

// SpawnedEnv is what the daemon adds to the environment of a spawned
// job's ranks (JobInfo.Spawner set): MPICH's PMI-1 client believes it
// was spawned only when PMI_SPAWNED=1, and then looks for its parent's
// port (WIRE.md §9). PMI-2 clients ignore it.
func SpawnedEnv(info JobInfo) []string {
	if info.Spawner == "" {
		return nil
	}
	return []string{"PMI_SPAWNED=1"}
}

// ErrNotPublished is what Backend.Lookup returns (wrapped or not) for a
// service nobody has published: the clients get "service not found".
var ErrNotPublished = errors.New("service not published")

// Ring is what PMIX_Ring gives one rank: its position in the ring and the
// values of its two neighbours.
type Ring struct {
	Count int    // the sum of the counts of every rank before this one
	Left  string // the right value given by the rank before this one (wrapping round)
	Right string // the left value given by the rank after this one (wrapping round)
}

// Backend is the daemon's side of one rank's PMI connection. Serve calls
// it from the connection's own goroutine, one call at a time, in the order
// the rank's requests arrive; calls for different ranks of one daemon come
// from different goroutines at once, so a daemon typically turns each call
// into an event of its loop and waits for the answer. Calls that wait for
// other ranks take a context: when it ends they must return promptly
// (with ctx.Err() where they return an error), and Serve then ends too.
type Backend interface {
	// Info describes the rank and its job. Called once, when Serve starts.
	Info() JobInfo

	// Put records key=value among this rank's puts since its last fence.
	// They become visible to Get — for every rank, this one included —
	// only once the next Fence has completed. MPICH never reads a key
	// without a fence in between, and never puts a key twice in one epoch
	// (if it did, the later value may win). An error is reported to the
	// client; MPICH treats any failed put as fatal, so fail only when the
	// job is going down anyway.
	Put(key, value string) error

	// Fence is the collective commit: it returns once every rank of the
	// job has entered it, after all of their earlier puts have been merged
	// into the job-wide store every Get reads. Every rank calls it the
	// same number of times (PMI-1 barrier_in, PMI-2 kvs-fence; 2 to 4
	// times per MPI run). An error ends the rank's call in failure.
	Fence(ctx context.Context) error

	// Get reads key from the store committed by the last completed fence.
	// It must answer at once: false if the key is not there (yet). The
	// clients probe for keys that may not exist and expect "not found",
	// never a wait. PMI_process_mapping is answered from Info, never here.
	Get(key string) (string, bool)

	// PutNodeAttr sets a node-local attribute, visible at once to the
	// ranks on the same node (one store per daemon), and wakes any
	// NodeAttr call waiting for that key.
	PutNodeAttr(key, value string)

	// NodeAttr reads a node-local attribute. With wait false it answers at
	// once. With wait true it blocks until a rank on the same node puts the
	// key — MPICH asks for the node's shared-memory name before its node
	// root has put it, and a "not found" would make MPI_Init fail — or
	// until ctx ends, when it returns false.
	NodeAttr(ctx context.Context, key string, wait bool) (string, bool)

	// Ring is the PMIX_Ring collective (Slurm's PMI-2 extension, used by
	// MVAPICH2): every rank gives a count and two values, and each gets
	// back the exclusive prefix sum of the counts in ring order (rank
	// order, unless the daemons number the ring otherwise) and its
	// neighbours' values, as Ring documents. Returns once every rank has
	// entered.
	Ring(ctx context.Context, count int, left, right string) (Ring, error)

	// Allgather is the PMIX_Allgather extension (EXTENSIONS.md): every
	// rank gives one value, of any bytes, and gets back every rank's value
	// in rank order (len == Size) once all ranks have entered. It is a
	// collective like Fence and follows its context rules: every rank
	// calls it the same number of times, in the same order among its
	// fences and rings; when ctx ends it returns promptly with ctx.Err();
	// any other error ends the rank's call in failure. The values are not
	// stored: Get never sees them.
	Allgather(ctx context.Context, value string) ([]string, error)

	// Abort reports that the rank asked to abort the job with this exit
	// status (PMI-1 sends it; for PMI-2, which does not, Serve takes it
	// from the "MPI_Abort(comm, code)" text of msg, or uses 1). The daemon
	// must kill the whole job: the client waits forever for an answer that
	// never comes, and Serve keeps its connection open until ctx ends,
	// because closing it would make MPI_Abort return into the program.
	Abort(status int, msg string)

	// Spawn starts a new job for MPI_Comm_spawn or
	// MPI_Comm_spawn_multiple (the apps in order, ranks numbered across
	// them) and returns its name, the new job's KVSName, once all of its
	// ranks have been started; the new job's JobInfo.Spawner is this
	// job's KVSName, and req.Preput is in its key-value space before its
	// ranks start. It blocks like Fence and follows its context rules;
	// any other error (the program is missing, too few slots) is the
	// client's failure reply, and the rank goes on. Only the rank that
	// called MPI_Comm_spawn (the root) asks.
	Spawn(ctx context.Context, req modex.SpawnRequest) (name string, err error)

	// Publish records port under service for every job of this mpirun
	// (MPI_Publish_name); an error (the service is already published)
	// is the client's failure reply.
	Publish(ctx context.Context, service, port string) error

	// Lookup returns the port published under service
	// (MPI_Lookup_name) at once, or ErrNotPublished: the clients do not
	// wait for a later publish.
	Lookup(ctx context.Context, service string) (port string, err error)

	// Unpublish removes service (MPI_Unpublish_name); an error (it is
	// not published) is the client's failure reply.
	Unpublish(ctx context.Context, service string) error

	// Finalize reports that the rank has finalized PMI. Its connection
	// ends next; the process itself may keep running non-MPI code.
	Finalize()
}
