// Package timeouts holds the runtime's bounds on a stall, in one value:
// how long each step may make no progress before the runtime counts it
// as failed. mpirun fills it (defaults, then a test's or a user's
// overrides), checks it once, and hands it to every part that waits:
// the transport's liveness, the daemons' protocol machine, the rank
// guards and the simulator, which therefore can never disagree.
//
// Values are milliseconds, not time.Duration: the protocol machine and
// the simulator are pure and may not import time.
package timeouts

import (
	"fmt"
	"slices"
	"strings"
)

// Timeouts are the runtime's bounds, in milliseconds.
type Timeouts struct {
	// KeepAliveMS is how often a quiet link is pinged.
	KeepAliveMS int64
	// SilenceMS: a link that brought nothing for this long is down, its
	// peer reported as one that stopped answering.
	SilenceMS int64
	// HandshakeMS bounds a connection's authentication.
	HandshakeMS int64
	// HelloMS bounds how long an accepted connection may take to say who
	// it is.
	HelloMS int64
	// CallbackMS is how long a spawned orted may take to call back
	// (mpirun --callback-timeout).
	CallbackMS int64
	// DrainMS bounds how long mpirun waits, once the job's end is
	// decided, for every daemon to flush its output and exit (see
	// DrainWaitMS).
	DrainMS int64
	// StopWaitMS bounds how long Ctrl-Z waits for the ranks to be
	// stopped before it stops mpirun anyway.
	StopWaitMS int64
	// GuardStoppedMS is how long a rank's guard lets its daemon stay
	// stopped (or stuck in the kernel) before it kills the daemon and the
	// rank.
	GuardStoppedMS int64
	// PMIDrainMS bounds how long an ended rank's PMI server may take to
	// read what the rank wrote before it ended.
	PMIDrainMS int64
	// SlotWaitMS bounds how long a child job (MPI_Comm_spawn) that found
	// too few free slots waits for running child jobs to end and free
	// theirs, from the last one that ended.
	SlotWaitMS int64
}

// Default is what a job runs with unless told otherwise.
func Default() Timeouts {
	return Timeouts{
		KeepAliveMS:    2_000,
		SilenceMS:      20_000,
		HandshakeMS:    10_000,
		HelloMS:        10_000,
		CallbackMS:     30_000,
		DrainMS:        20_000,
		StopWaitMS:     2_000,
		GuardStoppedMS: 30_000,
		PMIDrainMS:     2_000,
		SlotWaitMS:     10_000,
	}
}

// GuardsWaitMS is how long after a daemon's parent found it silent its
// ranks' guard must have killed it, were it stopped: the guard kills a
// daemon stopped for GuardStoppedMS, seen by polling every second, and it
// stopped at most two keep-alive intervals after its last byte (its
// watch pings a link quiet for one, checked once every one), which was
// SilenceMS before its parent found it silent.
func (t Timeouts) GuardsWaitMS() int64 {
	return t.GuardStoppedMS - t.SilenceMS + 2*t.KeepAliveMS + GuardPollMS
}

// GuardPollMS is how often a rank's guard looks whether its daemon is
// stopped.
const GuardPollMS = 1000

// DrainWaitMS is how long mpirun's drain timer runs: DrainMS, or longer
// than GuardsWaitMS by a keep-alive interval where the bounds make that
// wait the longer (a short silence bound, a long guard-stopped one). A
// daemon that waits for a stopped child's guards began the wait when it
// found the child silent, before the failure reached mpirun; mpirun must
// not give up on it first.
func (t Timeouts) DrainWaitMS() int64 {
	return max(t.DrainMS, t.GuardsWaitMS()+t.KeepAliveMS)
}

// WithDefaults fills t's zero bounds with the defaults, so that a value
// that sets only some (a test's, a simulation's) is whole.
func (t Timeouts) WithDefaults() Timeouts {
	def := Default()
	for _, b := range bounds {
		if ms := b.ms(&t); *ms == 0 {
			*ms = *b.ms(&def)
		}
	}
	return t
}

// bound names one field for Parse, String and Validate.
type bound struct {
	name string
	ms   func(*Timeouts) *int64
}

var bounds = []bound{
	{"keep-alive", func(t *Timeouts) *int64 { return &t.KeepAliveMS }},
	{"silence", func(t *Timeouts) *int64 { return &t.SilenceMS }},
	{"handshake", func(t *Timeouts) *int64 { return &t.HandshakeMS }},
	{"hello", func(t *Timeouts) *int64 { return &t.HelloMS }},
	{"callback", func(t *Timeouts) *int64 { return &t.CallbackMS }},
	{"drain", func(t *Timeouts) *int64 { return &t.DrainMS }},
	{"stop-wait", func(t *Timeouts) *int64 { return &t.StopWaitMS }},
	{"guard-stopped", func(t *Timeouts) *int64 { return &t.GuardStoppedMS }},
	{"pmi-drain", func(t *Timeouts) *int64 { return &t.PMIDrainMS }},
	{"slot-wait", func(t *Timeouts) *int64 { return &t.SlotWaitMS }},
}

// Validate says what is wrong with t: a bound that is not positive, or
// two bounds in the wrong order.
func (t Timeouts) Validate() error {
	for _, b := range bounds {
		if ms := *b.ms(&t); ms <= 0 {
			return fmt.Errorf("timeout %s must be positive, not %s", b.name, Format(ms))
		}
	}
	switch {
	case t.KeepAliveMS >= t.SilenceMS:
		// A live peer must be heard from within the silence bound.
		return fmt.Errorf("timeout keep-alive (%s) must be shorter than silence (%s)", Format(t.KeepAliveMS), Format(t.SilenceMS))
	case t.GuardStoppedMS <= t.SilenceMS:
		// A stopped daemon's parent reports it as silent before its
		// guard kills it: the user learns which node hung.
		return fmt.Errorf("timeout guard-stopped (%s) must be longer than silence (%s)", Format(t.GuardStoppedMS), Format(t.SilenceMS))
	}
	return nil
}

// Parse overrides the defaults with a list such as "silence=3s,drain=5s";
// "" is the defaults. The result is validated.
func Parse(list string) (Timeouts, error) {
	t := Default()
	for item := range strings.SplitSeq(list, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		i := slices.IndexFunc(bounds, func(b bound) bool { return b.name == name })
		if !ok || i < 0 {
			return Timeouts{}, fmt.Errorf("timeout %q: want NAME=DURATION, NAME one of %s", item, names())
		}
		ms, err := ParseMS(value)
		if err != nil {
			return Timeouts{}, fmt.Errorf("timeout %s: %v", name, err)
		}
		*bounds[i].ms(&t) = ms
	}
	return t, t.Validate()
}

// String lists the bounds that differ from the defaults, as Parse reads
// them; "" for the defaults.
func (t Timeouts) String() string {
	def := Default()
	var items []string
	for _, b := range bounds {
		if ms := *b.ms(&t); ms != *b.ms(&def) {
			items = append(items, b.name+"="+Format(ms))
		}
	}
	return strings.Join(items, ",")
}

func names() string {
	var out []string
	for _, b := range bounds {
		out = append(out, b.name)
	}
	return strings.Join(out, ", ")
}
