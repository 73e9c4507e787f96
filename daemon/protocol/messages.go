package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"

	"prsh/internal/timeouts"
	"prsh/job/binding"
	"prsh/job/hostrange"
	"prsh/modex/collective"
	"prsh/routed"
	"prsh/spawn"
)

// Message is a control message between two daemons. It travels as the
// JSON payload of a transport frame whose kind byte says its type; launch
// data is small next to what the ranks exchange later, and JSON keeps the
// wire readable. PROTOCOL.md beside this file says who sends each and when.
type Message interface{ message() }

// Version numbers the daemons' wire: this table, the messages' encoding
// and the transport under them (PROTOCOL.md here and in transport/). Any
// change that a daemon built before it would misread raises it. A parent
// gives it to each child it spawns (orted --protocol), which refuses to
// run under a parent of another version: a node with another prsh
// installed fails at its start, by name, instead of mid-launch with a
// message it cannot decode.
const Version = 11

// kinds is the one table of message kinds: the index is the frame's kind
// byte. Encoding and decoding follow from it; a new message is one line
// here and a type below.
var kinds = [...]Message{
	1:  Hello{},
	2:  Welcome{},
	3:  Addrs{},
	4:  Launch{},
	5:  Failure{},
	6:  Milestone{},
	7:  Teardown{},
	8:  Signal{},
	9:  SignalAck{},
	10: Skipped{},
	11: CollectiveUp{},
	12: CollectiveDown{},
	13: ModexRequest{},
	14: ModexReply{},
	15: Pending{},
	16: JobKill{},
	17: JobEnd{},
	18: CollectiveProbe{},
	19: ChildJobRequest{},
	20: ChildJobReply{},
	21: NamePublish{},
	22: NameLookup{},
	23: NameUnpublish{},
	24: NameReply{},
	25: RanksLeft{}, // ranksleft.go
	31: Lost{},      // dvmlost.go
}

var kindOfType = func() map[reflect.Type]byte {
	m := map[reflect.Type]byte{}
	for k, msg := range kinds {
		if msg != nil {
			m[reflect.TypeOf(msg)] = byte(k)
		}
	}
	return m
}()

// KindOf is the frame kind of msg's type.
func KindOf(msg Message) (byte, bool) {
	k, ok := kindOfType[reflect.TypeOf(msg)]
	return k, ok
}

// Encode turns msg into a frame's kind and payload.
func Encode(msg Message) (byte, []byte, error) {
	kind, ok := KindOf(msg)
	if !ok {
		return 0, nil, fmt.Errorf("no wire kind for %T", msg)
	}
	b, err := json.Marshal(msg)
	return kind, b, err
}

// Decode reads a frame's kind and payload back into a message.
func Decode(kind byte, payload []byte) (Message, error) {
	if int(kind) >= len(kinds) || kinds[kind] == nil {
		return nil, fmt.Errorf("unknown message kind %d", kind)
	}
	v := reflect.New(reflect.TypeOf(kinds[kind]))
	if err := json.Unmarshal(payload, v.Interface()); err != nil {
		return nil, fmt.Errorf("message kind %d: %w", kind, err)
	}
	return v.Elem().Interface().(Message), nil
}

// Hello is the first message on a connection: who is calling.
type Hello struct {
	ID   int
	Addr string
}

// Welcome hands a newly connected child the job and its subtree.
type Welcome struct {
	Job    JobSpec
	Nodes  []spawn.Node // the child's descendants, which it spawns in turn
	Parent int          // the id of the daemon sending it
}

// JobSpec is what every daemon needs to know about the job's daemons.
type JobSpec struct {
	Daemons int // n + 1: mpirun and one orted per node
	// Planned is the number of daemons the job started with, once it
	// has added some (a child job's new hosts: added.go); 0 = Daemons.
	// The trees are built over the planned ones; the added are leaves
	// under mpirun.
	Planned      int    `json:",omitempty"`
	SpawnDegree  int    // δ; 0 = the routing topology's tree
	Routed       string // routing topology name
	RoutedRadix  int
	OrtedPath    string
	LogLevel     string
	SSHTimeoutMS int64 // connect timeout of the native ssh agent
	KillGraceMS  int64 // between SIGTERM and SIGKILL when the job is stopped
	// Timeouts are the job's bounds on a stall (callback, kill grace,
	// silence, drain, …); a zero field is its default (New fills them).
	Timeouts    timeouts.Timeouts
	MaxSessions int
	LaunchAgent string // external launch command template; "" = native ssh
	// SrunJob is the Slurm job (its SLURM_JOB_ID) in which each orted
	// is a job step that its parent starts with srun; "" = LaunchAgent,
	// else native ssh.
	SrunJob string `json:",omitempty"`
	// OneStep: mpirun spawns every node at once in one job step of
	// SrunJob (one SpawnStep), so the spawn tree is flat: every orted is
	// mpirun's child. The routing topology does not change.
	OneStep   bool   `json:",omitempty"`
	SSHConfig string // the user's ssh config file; "" = ~/.ssh/config
	// SSHSystemConfig is read after SSHConfig: "" = /etc/ssh/ssh_config
	// on each node, "none" = none (the default with an explicit SSHConfig,
	// as ssh -F).
	SSHSystemConfig string
	// Hosts is the node name of each daemon id, [0] = mpirun's; on the
	// wire, one string of ranges such as "login1,node[001-512]".
	Hosts hostrange.List
	ID    string // names the job (its PMI key-value space); unique per run
	// SkipUnreachable leaves out nodes that cannot be spawned and adopts
	// their subtrees, instead of aborting (--on-unreachable skip).
	SkipUnreachable bool
	// HoldLaunch starts no rank until every daemon has called back
	// (--hold-launch), as Open MPI does: a node that fails in phase 1 then
	// leaves no rank started anywhere.
	HoldLaunch bool
	// NoPMIx: the orteds boot no PMIx server, as mpirun found that no
	// program of the job may use one (--pmix). Its zero value boots it.
	NoPMIx bool `json:",omitempty"`
	// Rankless lists the orteds (by id, as a cpu list: "3,5-9") that run
	// none of the job's ranks, which start no guard ahead of them; ""
	// when every orted runs some, and in a DVM.
	Rankless string `json:",omitempty"`
	// PMIxMetaSegment and PMIxDataSegment are the sizes in bytes of the
	// PMIx servers' shared-memory store segments (pmix.Segments), which
	// every rank's client must be told too; 0 is the default size.
	PMIxMetaSegment int64 `json:",omitempty"`
	PMIxDataSegment int64 `json:",omitempty"`
	// PortRange is where each orted listens ("LO-HI", mpirun
	// --port-range); "" lets the kernel pick.
	PortRange string `json:",omitempty"`
	// Stage lists the files --preload-binary (and --preload-libs) copies
	// down the spawn tree into each node's stage directory before its
	// ranks start; nil stages nothing.
	Stage []StagedFile `json:",omitempty"`
	// DVM: the daemons stay up between jobs (mpirun --dvm-start): mpirun
	// launches nothing at its start, and each job a client submits is a
	// Launch of its own number (DVM.md).
	DVM bool `json:",omitempty"`
}

// StagedFile is one file staged on every node: the bytes travel on the
// stage stream of each spawn-tree link (PROTOCOL.md, "Staging"), in the
// order of JobSpec.Stage, each followed by its SHA-256.
type StagedFile struct {
	Source string // its path on the launch node, for messages
	Name   string // its path under the node's stage directory
	Arg    string // the program (Argv[0] as written) it is; "" for a library
	Size   int64
	Mode   uint32 // permission bits, kept on the copy
}

// launchesAfterSpawn says whether mpirun holds the Launch until the
// Spawned milestone, rather than overlapping it with phases 1 and 2.
// planned is the number of daemons the job started with.
func (j JobSpec) planned() int {
	if j.Planned > 0 {
		return j.Planned
	}
	return j.Daemons
}

func (j JobSpec) launchesAfterSpawn() bool { return j.SkipUnreachable || j.HoldLaunch }

// Addrs carries contact addresses for phase 2.
type Addrs struct {
	Entries routed.Entries // on the wire, a list of runs {First, Addrs}
}

// Launch is the application launch, broadcast over the routing topology.
type Launch struct {
	Argv     []string
	Env      []string // set on top of each daemon's environment
	Wdir     string   // "" = the daemon's home directory
	WdirSet  bool     // the user asked for Wdir: a missing one is an error
	RankNode RankMap  // daemon id of each rank; on the wire, runs ("1-512*4")
	// Job is the job's number in a DVM, from 1; 0 in a plain mpirun.
	Job int `json:",omitempty"`
	// Added are the hosts of the daemons the job added (added.go), from
	// JobSpec.Planned on, as mpirun knew them when it launched this.
	Added []string `json:",omitempty"`
	// NoPMIx: a DVM job whose client found that no program of it may use
	// PMIx (its --pmix): the daemons register no namespace for it. A
	// plain mpirun's daemons boot no server at all instead (JobSpec).
	NoPMIx bool `json:",omitempty"`
	// Sparse: a DVM job without PMIx that places no rank on some live
	// daemon. Its Launch, JobKill, JobEnd and Signals go down the spawn
	// tree only to the children whose subtree holds its ranks, and its
	// reductions wait for those alone, so that a small job in a large
	// DVM costs the daemons it uses (DVM.md, "Jobs sent where their
	// ranks are"). A job with PMIx goes everywhere: a daemon may need
	// any job's rank map for PMIx_Connect and fences over several jobs.
	Sparse bool `json:",omitempty"`
	// RanksByNode says RankNode never decreases (ranks placed node by
	// node). mpirun finds it out once, so that each of n daemons finds
	// its ranks by a binary search, not a scan of every rank.
	RanksByNode bool
	// StdinRank is the rank that gets mpirun's stdin, StdinAll or
	// StdinNone.
	StdinRank   int
	MergeStderr bool // the ranks' stderr goes to their stdout pipe
	// More are the further programs of an MPMD launch (mpirun -np 2 a :
	// -np 4 b), in rank order; nil for one program.
	More []App `json:",omitempty"`
	// Bind is how each daemon binds its ranks to its own node's CPUs
	// (--bind-to, --map-by socket, --report-bindings); zero: unbound.
	Bind binding.Policy `json:",omitzero"`
	// Parent names the rank that asked for this job (a child job,
	// MPI_Comm_spawn); nil for a job mpirun or a DVM client started.
	Parent *ParentRank `json:",omitempty"`
	// Preput is put into the job's key-value space before its ranks
	// start (the spawner's PMI preputs).
	Preput map[string]string `json:",omitempty"`
}

// ParentRank is the rank that asked for a child job: its job, its rank
// and its job's PMI/PMIx namespace.
type ParentRank struct {
	Job, Rank int
	Name      string
}

// App is one further program of an MPMD launch: ranks from First up to
// the next App's First run it instead of the Launch's own Argv, Env and
// Wdir.
type App struct {
	First   int
	Argv    []string
	Env     []string
	Wdir    string
	WdirSet bool
}

// AppOf returns the program rank runs and its number (0 for the Launch's
// own, i+1 for More[i]), the MPI_APPNUM of the rank.
func (l Launch) AppOf(rank int) (App, int) {
	for i := len(l.More) - 1; i >= 0; i-- {
		if rank >= l.More[i].First {
			return l.More[i], i + 1
		}
	}
	return App{Argv: l.Argv, Env: l.Env, Wdir: l.Wdir, WdirSet: l.WdirSet}, 0
}

// Stdin targets besides a rank number.
const (
	StdinNone = -1
	StdinAll  = -2
)

// Failure reports something that ends the job, worded for the user.
type Failure struct {
	Msg    string // one line, naming the node and rank
	Status int    // the exit status mpirun should take
	// Job is the DVM job a rank's failure ends; 0: a daemon's failure
	// (or a plain mpirun's), which ends the whole job or DVM.
	Job int `json:",omitempty"`
	// Lost is the daemon whose loss this is, in a DVM (its parent saw it
	// go): the DVM drops its subtree and goes on. 0: none.
	Lost int `json:",omitempty"`
}

// Milestone says the sender's whole subtree reached Kind.
type Milestone struct {
	Kind int
	Job  int `json:",omitempty"` // the DVM job of a Started or Exited
}

// RanksLeft says every rank of job Job in the sender's subtree left: it
// finalised PMI, or exited without failing the job.
type RanksLeft struct {
	Job int `json:",omitempty"`
}

// Skipped tells mpirun a node was left out, and why.
type Skipped struct {
	ID  int
	Msg string
}

// Teardown ends the job: kill the ranks, flush, exit.
type Teardown struct{ Kill bool }

// JobKill stops one DVM job: SIGTERM its ranks, SIGKILL after the kill
// grace; the DVM goes on.
type JobKill struct{ Job int }

// JobEnd says a DVM job is over everywhere: what its ranks left behind
// is killed and its state let go of.
type JobEnd struct{ Job int }

// Signal asks every daemon to deliver Sig to its ranks. With Ack, each
// subtree answers with a SignalAck of the same Seq once the signal is
// delivered in it.
type Signal struct {
	Sig int
	Ack bool
	Seq int
	Job int `json:",omitempty"` // a DVM job's ranks only; 0: every rank
}

// SignalAck says the Signal numbered Seq was delivered in the sender's
// subtree.
type SignalAck struct{ Seq int }

// CollectiveUp carries a subtree's part of collective ID (a PMI fence,
// allgather or ring) up the spawn tree, once every rank in the subtree
// entered it.
type CollectiveUp struct {
	ID   collective.ID
	Part collective.Part
	Job  int `json:",omitempty"` // the DVM job whose collective it is
}

// CollectiveDown carries collective ID's result down the spawn tree: all
// of it, or, for a ring, the answers of the ranks below the receiver.
type CollectiveDown struct {
	ID   collective.ID
	Part collective.Part
	Job  int `json:",omitempty"`
}

// CollectiveProbe asks a child for its subtree's part of a group's
// collective ID, which the sender opened and waits for: a member that
// left in that subtree fails it rather than leave it waiting (groups.go).
type CollectiveProbe struct {
	ID  collective.ID
	Job int `json:",omitempty"`
}

// ModexRequest asks daemon To for what rank Rank (one of To's) put,
// for daemon From's request ID (PMIx direct modex). It travels along the
// routing topology.
type ModexRequest struct {
	ID, From, To, Rank int
	Job                int `json:",omitempty"` // the DVM job of Rank
}

// ModexReply answers ModexRequest ID of daemon To: the owner's data, or
// why there is none. It travels along the routing topology.
type ModexReply struct {
	ID, To int
	Data   []byte
	Err    string
}

// Pending says which daemons below the sender have not called back yet,
// while its subtree is still coming up: how many, and the first few of
// them by name (at most MaxSlow ids), so that it stays small however
// large the subtree is. The Addrs that reports the subtree up says the
// wait is over; no Pending follows it.
type Pending struct {
	Missing int
	Slow    []int
}

func (Hello) message()           {}
func (Welcome) message()         {}
func (Addrs) message()           {}
func (Launch) message()          {}
func (Failure) message()         {}
func (Milestone) message()       {}
func (Teardown) message()        {}
func (Signal) message()          {}
func (SignalAck) message()       {}
func (Skipped) message()         {}
func (CollectiveUp) message()    {}
func (CollectiveDown) message()  {}
func (CollectiveProbe) message() {}
func (ModexRequest) message()    {}
func (ModexReply) message()      {}
func (Pending) message()         {}
func (JobKill) message()         {}
func (JobEnd) message()          {}
func (ChildJobRequest) message() {}
func (ChildJobReply) message()   {}
func (RanksLeft) message()       {}

// Milestone kinds, reported by a subtree once reached everywhere in it.
const (
	Spawned   = iota // every daemon connected (phase 1)
	Addressed        // every daemon knows every address (phase 2)
	Started          // every rank started
	Exited           // every rank exited
	NumMilestones
)

// MilestoneNames say what each milestone means, for --report-launch-times.
var MilestoneNames = [NumMilestones]string{"phase 1 (daemons spawned)", "phase 2 (addresses exchanged)", "ranks started", "ranks exited"}
