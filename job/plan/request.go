// Package plan turns a job request — hosts, programs, placement, the
// ranks' environment, how daemons are started and reached — into the
// configuration mpirun's daemon runs (daemon.Config). It is where the
// policy lives: where ranks go, and again after nodes are skipped, what
// environment they get, which launch agent starts the orteds and which
// address mpirun listens on.
//
// It reads no flags and no process state: cmd/mpirun converts its
// command line into a Request and the launch node's facts (its name,
// working directory, environment) into a Here, so the plan can be
// table-tested. It does read the files named in the request (hostfiles,
// appfiles, ssh configs, programs to stage).
package plan

import (
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Request is a job as the user asked for it, each field a flag of
// mpirun's with the flag's default where it has one.
type Request struct {
	// Hosts.
	Hosts    []string // -H values, each a list such as node[01-16]:4
	Hostfile string
	// Lost are hosts left out of the host list: the nodes a DVM lost,
	// for a job placed over the DVM's own hosts.
	Lost []string
	// Submit: the job goes to a DVM whose daemons run (mpirun --dvm), so
	// no launch agent nor address of mpirun's is chosen: for a small job
	// the agent's check of every host's ssh settings was a fifth of its
	// client's CPU.
	Submit bool

	// Programs: Args after the options, split at ":", or Appfile.
	Args    []string
	NP      int
	NPSet   bool
	Appfile string

	Placement   Placement
	Environment Environment

	// Daemons: how they are spawned, reached and bounded.
	SpawnDegree string // a number or auto
	// SpawnDegreeSet: the user gave --spawn-degree; inside a Slurm
	// allocation the daemons then start along that tree, an srun per
	// edge, instead of in one job step.
	SpawnDegreeSet    bool
	SpawnHopHint      time.Duration
	SpawnCostHint     time.Duration
	Routed            string
	RoutedRadix       int
	LaunchAgent       string
	Launcher          string // auto, ssh or srun, or a peer's spelling (compat.Launcher); "" = auto
	SSHConfig         string
	SSHSystemConfig   string
	SSHConnectTimeout time.Duration
	SSHMaxSessions    int
	CallbackTimeout   time.Duration
	KillGrace         time.Duration
	Timeouts          string // the other bounds on a stall, NAME=DURATION,… (--timeouts)
	OnUnreachable     string
	EveryHost         bool // an orted on every host of the list, ranks or not (--every-host)
	HoldLaunch        bool
	PMIx              string // auto, on or off
	PortRange         string
	Orted             string
	ListenIP          string
	LogLevel          string

	// The ranks' files, input and end.
	PreloadBinary bool
	PreloadLibs   bool
	Wdir          string
	Stdin         string
	MergeStderr   bool
	Timeout       string

	// Reports on Stderr.
	DisplayMap        bool
	DisplayAllocation bool
}

// Placement is how ranks are placed on the nodes and bound.
type Placement struct {
	MapBy          string
	MapBySet       bool
	NPerNode       int
	CPUsPerRank    int
	CPUsPerRankSet bool
	BindTo         string
	BindToSet      bool
	Oversubscribe  bool
	ReportBindings bool
	// Older are Open MPI's older switches that are on, by name
	// (compat.OlderMapBy, compat.OlderBindTo).
	Older map[string]bool
}

// Environment is what the user forwards to the ranks, as given.
type Environment struct {
	X        []string // -x VAR, VAR=value or GLOB
	Genv     []string // -genv VAR value, as VAR=value
	Genvlist []string
	Env      []string // -env VAR value: the first program's own
	Envlist  []string
	MCA      []string // --mca KEY VALUE, as KEY=VALUE
	GMCA     []string
	Genvall  bool
	Genvnone bool
	Envall   bool
	Envnone  bool
	// FirstProgramFlags are which of Hydra's envall, envnone and envlist
	// were given: they apply to the first program alone.
	FirstProgramFlags []string
}

// Here is what the plan knows of the node mpirun runs on.
type Here struct {
	Hostname   string
	Dir        string   // mpirun's working directory; "" if unknown
	Environ    []string // mpirun's environment, as os.Environ gives it
	CPUs       int
	Executable string // mpirun's path, links resolved; "" if unknown
	// ExecutableErr says why Executable is unknown.
	ExecutableErr error
	JobID         string // unique to this job: mpirun's pid and clock
	Log           hclog.Logger
	// Stderr takes warnings and the --display-* reports.
	Stderr io.Writer
}

func (h Here) environ() environ { return environ{vars: h.Environ, stderr: h.Stderr} }
