// Package pmix runs the PMIx reference library's server for the local
// ranks of one daemon, so that programs whose MPI speaks only PMIx (Open
// MPI 4 and 5) initialise under our daemons. The library does the wire,
// the handshake and the shared-memory store; this package tells it about
// the job, and turns its upcalls (a client connected, finalized, aborted,
// a fence, a request for a remote rank's data) into calls on a Handler
// that the daemon implements over its own tree.
//
// Everything that crosses cgo lives here. It is built only with the
// "pmix" build tag (the Makefile sets it when pkg-config finds pmix);
// without it, Available is false and Start says how to get PMIx support.
package pmix

import (
	"errors"
	"time"
)

// Job is what the library is told about the whole job.
type Job struct {
	Namespace string   // the job's name, unique per job of the server
	Hosts     []string // node name of each node id
	RankNode  []int    // node id of each rank
	Node      int      // this server's node id
	TmpDir    string   // scratch directory offered to the ranks
	// AppFirst is the first rank of each program of an MPMD launch, in
	// order (0 first); nil for one program.
	AppFirst []int
	// Parent is the rank whose PMIx_Spawn (or other spawn) started this
	// job (PMIX_SPAWNED, PMIX_PARENT_ID); nil for a job mpirun started.
	Parent *Proc
}

// Proc names a rank of a job: the job's namespace, and the rank in it.
type Proc struct {
	Namespace string
	Rank      int
}

// Handler is the daemon's side of the upcalls. Its methods run one at a
// time, in the order the library made the upcalls, on a goroutine of this
// package (never on the library's threads); they may block.
type Handler interface {
	Connected(p Proc)
	Finalized(p Proc)
	Aborted(p Proc, status int, msg string)
	// Fence: every local rank in it entered a fence over the whole job or
	// over some of its ranks; Data is their contribution, to be merged
	// with that of every other node that holds one.
	Fence(f Fence)
	// DirectModex: a local rank wants data that p put and that no fence
	// has brought here; p may be of another namespace (a job connected).
	DirectModex(p Proc, reply *Reply)
	// Publish, Lookup and Unpublish: a local rank uses the name service
	// (PMIx_Publish, PMIx_Lookup, PMIx_Unpublish; MPI_Publish_name and
	// Open MPI's connect/accept).
	Publish(p Publish)
	Lookup(l Lookup)
	Unpublish(u Unpublish)
	// Connect: every local rank in it called PMIx_Connect (or
	// PMIx_Disconnect) over the listed processes, which may be of
	// several namespaces.
	Connect(c Connect)
}

// Fence is one node's part of a fence over the whole job (Namespace), or
// over some of its ranks, or over processes of several namespaces.
type Fence struct {
	Namespace string
	// Ranks lists the ranks of a fence over part of the job, sorted,
	// each once; nil for the whole job.
	Ranks []int
	// Procs lists the processes of a fence over several namespaces
	// (Namespace and Ranks then unset), as the ranks gave them; a rank
	// Wildcard stands for its whole namespace.
	Procs   []Proc
	Data    []byte
	Collect bool          // the ranks want everyone's data back
	Timeout time.Duration // 0 = none
	Reply   *Reply
}

// Wildcard is the rank that stands for every rank of its namespace.
const Wildcard = -2

// Name is one published key, its value, and the process that published
// it (in a lookup's answer). Binary: the value is bytes (a PMIx byte
// object, as Open MPI's connect publishes), not text.
type Name struct {
	Key, Value string
	Binary     bool
	Owner      Proc
}

// Publish is a rank's PMIx_Publish: Names, visible to its own job only
// (JobOnly: a namespace's range) or to every job of the mpirun.
type Publish struct {
	Proc    Proc
	Names   []Name
	JobOnly bool
	Reply   *Reply // its status only
}

// Lookup is a rank's PMIx_Lookup of Keys; Wait: until every key is
// published, for at most Timeout (0: no bound).
type Lookup struct {
	Proc    Proc
	Keys    []string
	Wait    bool
	Timeout time.Duration
	Reply   *LookupReply
}

// Unpublish is a rank's PMIx_Unpublish of Keys (nil: all it published).
type Unpublish struct {
	Proc  Proc
	Keys  []string
	Reply *Reply // its status only
}

// Connect is this node's part of a PMIx_Connect (or, Disconnect, a
// PMIx_Disconnect) over Procs: every local rank listed called it.
type Connect struct {
	Procs      []Proc // as the ranks gave them; a rank may be Wildcard
	Disconnect bool
	Timeout    time.Duration // 0 = none
	Reply      *Reply        // its status only
}

// Errors a Reply can carry back to the ranks.
var (
	ErrTimeout   = errors.New("pmix: timed out")
	ErrNotFound  = errors.New("pmix: not found")
	ErrFailed    = errors.New("pmix: failed")
	ErrDuplicate = errors.New("pmix: duplicate key")
)

// ErrUnavailable says this daemon was built without the library, and
// mpirun found no orted-pmix beside it to start instead.
var ErrUnavailable = errors.New("it speaks PMIx (Open MPI), but its daemon has no PMIx server: put orted-pmix beside orted (apt-get install libpmix-dev, then make bin), or name it with --orted")
