package daemon

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/protocol"
	"prsh/internal/timeouts"
	"prsh/ranks"
	"prsh/spawn"
	"prsh/spawn/agent"
)

// The driver carries out every action the machine may ask for
// (protocol.Actions): none takes its unknown path.
func TestDriverHandlesEveryAction(t *testing.T) {
	for _, a := range protocol.Actions {
		t.Run(fmt.Sprintf("%T", a), func(t *testing.T) {
			var logs lockedBuffer
			d := bareMpirun(t, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug}))
			d.carry([]protocol.Action{a})
			if line := logs.String(); strings.Contains(line, "unknown action") {
				t.Error(line)
			}
		})
	}
}

// bareMpirun is an mpirun built as Run builds it, on in-memory links, a
// manual clock and ranks that start nothing, whose loop does not run.
func bareMpirun(t *testing.T, log hclog.Logger) *Daemon {
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	job := protocol.JobSpec{Daemons: 2, Routed: "radix", OrtedPath: "orted", Hosts: []string{"mpirun", "node001"},
		ID: "actions", NoPMIx: true, Timeouts: timeouts.Default()}
	d := &Daemon{
		cfg: Config{Node: "mpirun", Log: log, Job: job, Timeouts: job.Timeouts, Stdout: io.Discard, Stderr: io.Discard,
			Nodes: []spawn.Node{{ID: 1, Host: "node001"}}, App: protocol.Launch{Argv: []string{"app"}, RankNode: []int{1}},
			Agent:    &fakeAgent{c: &cluster{sc: scenario{refuse: map[int]string{0: "refused", 1: "refused"}}}},
			StopSelf: func() {},
			Ranks: func(hclog.Logger, func(ranks.Event)) ranks.Starter {
				return &fakeRanks{live: map[int]chan syscall.Signal{}}
			}},
		log: log, events: make(chan any, 256), ctx: ctx, stop: stop,
		links: map[protocol.LinkID]*link{}, procs: map[int]agent.Process{}, timers: map[protocol.Timer]*timer{},
		jobs: map[int]*jobRanks{}, exit: make(chan int, 1),
		network: NewMemNetwork().Host(), clock: NewManualClock(time.Unix(0, 0)),
	}
	if err := d.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.ln.Close() })
	if err := d.bootstrap(); err != nil {
		t.Fatal(err)
	}
	return d
}
