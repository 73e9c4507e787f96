package daemon

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/protocol"
	"prsh/daemon/protocol/sim"
	"prsh/internal/timeouts"
	"prsh/spawn"
)

// TestScenariosThroughTheDriver runs the simulator's golden scenarios
// (daemon/protocol/sim/testdata) through the real driver: mpirun and
// every orted run Run in this process over in-memory links, with fake
// ranks and a launch agent that starts orteds as goroutines. The driver
// is concurrent, so the bar is each scenario's outcome, read from the
// end of its golden file: mpirun's exit status and what it printed,
// where the ranks started, and that no daemon is left running.
func TestScenariosThroughTheDriver(t *testing.T) {
	files, _ := filepath.Glob("protocol/sim/testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenarios in protocol/sim/testdata/")
	}
	ran := 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := parseScenario(string(text))
			if err != nil {
				t.Fatal(err)
			}
			if why, ok := notThroughTheDriver[name]; ok {
				if sc.unsupported == "" {
					t.Fatalf("listed as left out (%s), but every directive it uses is supported", why)
				}
				t.Skipf("left out: %s", why)
			}
			if sc.unsupported != "" {
				t.Fatalf("uses %q, which the driver test does not play: support it or list the scenario in notThroughTheDriver", sc.unsupported)
			}
			ran++
			if sc.dvm {
				playDVMThroughDriver(t, sc)
				return
			}
			playThroughDriver(t, sc)
		})
	}
	if ran == 0 {
		t.Fatal("no scenario ran through the driver")
	}
}

// notThroughTheDriver are the scenarios left out, and why.
var notThroughTheDriver = map[string]string{
	"allgather":               "its ranks would speak PMI-2's allgather; the fake ranks speak PMI-1 (fences)",
	"ring":                    "its ranks would speak PMI-2's ring; the fake ranks speak PMI-1 (fences)",
	"dmodex":                  "direct modex is asked by a PMIx server, which the fake ranks do not run",
	"group-fences":            "fences over a group of ranks come from a PMIx server, which the fake ranks do not run (e2e: TestPMIxGroupFence)",
	"group-fence-left":        "fences over a group of ranks come from a PMIx server, which the fake ranks do not run (e2e: TestPMIxGroupFenceLeft)",
	"fence-left":              "its fake ranks would finalise without fencing; they fence then finalise (e2e: TestPMIFenceRankFinalized, TestPMIxFenceRankFinalized)",
	"names":                   "name requests come from a PMIx server, which the fake ranks do not run (e2e: TestDVMConnectAccept, TestDVMNamesFail)",
	"connect":                 "fences over several jobs come from a PMIx server, which the fake ranks do not run (e2e: TestDVMFenceAcrossJobs)",
	"hung-daemon":             "a hung orted is noticed by the transport's silence bound, which in-memory links do not have",
	"hung-relay":              "a hung orted is noticed by the transport's silence bound, which in-memory links do not have",
	"hung-leaf":               "a hung orted is noticed by the transport's silence bound, which in-memory links do not have",
	"hung-before-launch":      "a hung orted is noticed by the transport's silence bound, which in-memory links do not have",
	"no-callback":             "needs an orted that starts but never calls back (a fault the fake agent does not play yet)",
	"hold-launch":             "needs an orted that starts but never calls back (a fault the fake agent does not play yet)",
	"waiting-fails":           "needs an orted that starts but never calls back (a fault the fake agent does not play yet)",
	"silent-node":             "needs a session whose orted never starts (a fault the fake agent does not play yet)",
	"slow-machine":            "needs orteds that call back late in virtual time (a fault the fake agent does not play yet)",
	"waiting":                 "needs orteds that call back late in virtual time (a fault the fake agent does not play yet)",
	"waiting-skip":            "needs orteds that call back late in virtual time (a fault the fake agent does not play yet)",
	"dvm-ctrl-z":              "a client's Ctrl-Z stops the client's process, which the driver test has not (e2e/dvm_test.go plays it)",
	"dvm-lost-daemon-goes-on": "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMLostDaemon plays it)",
	"dvm-lost-inner":          "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMLostInnerDaemon plays it)",
	"dvm-lost-binomial":       "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMLostDaemonBinomial plays it)",
	"dvm-lost-direct":         "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMLostDaemonDirect plays it)",
	"dvm-sparse":              "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMJobsAvoidAStoppedNode plays it)",
	"dvm-sparse-skip":         "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMOnUnreachableSkip plays the skip)",
	"dvm-sparse-lost":         "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMLostDaemon plays it)",
	"slurm-cancelled":         "needs sessions that end as srun's do when Slurm cancels the step (a fault the fake agent does not play; e2e TestSlurmJob/time_limit, spawn/agent TestSrunStepCancelled)",
	"dvm-skip":                "places jobs on some nodes (nodes=), which the driver test's clients do not (e2e TestDVMOnUnreachableSkip plays it)",
	"dvm-lost-relay":          "places jobs on some nodes (nodes=), which the driver test's clients do not; its race is the simulator's timing",
	"dvm-skip-then-lost":      "places jobs on some nodes (nodes=), which the driver test's clients do not",
	"dvm-lost-dial-race":      "places jobs on some nodes (nodes=), which the driver test's clients do not; its race is the simulator's timing",
	"childjob":                "a child job is asked by a rank's PMI or PMIx server, which the fake ranks do not run (e2e: TestPMIxChildJob)",
	"dvm-childjob":            "a child job is asked by a rank's PMI or PMIx server, which the fake ranks do not run (e2e: TestDVMChildJob)",
	"childjob-fails":          "a child job is asked by a rank's PMI or PMIx server, which the fake ranks do not run (e2e: TestPMIxChildJobFailures)",
	"childjob-addhost":        "a child job is asked by a rank's PMI or PMIx server, which the fake ranks do not run (e2e: TestPMIxChildJobAddHost)",
}

// scenario is what the driver test plays of a sim scenario.
type scenario struct {
	nodes, degree, ranks int
	routed               string
	skip, hold, step     bool
	dvm                  bool        // mpirun --dvm-start: jobs are submits
	submits              []dvmSubmit // in order
	rankMS               int         // -1: until signalled
	timeoutMS, graceMS   int
	callbackMS, fences   int
	rankStatus           map[int]int
	refuse               map[int]string
	timed                []timedEvent
	unsupported          string // the first directive it cannot play
	// From the golden trace.
	status    int
	stderr    []string
	placement map[int]int // rank → daemon, from "start ranks" lines
	stops     int         // how often mpirun stops itself (Ctrl-Z)
	jobStatus map[int]int // a DVM job's status, from "job N done" lines
}

// timedEvent is a directive with at=T: done once every rank runs.
type timedEvent struct {
	at   int
	kill int // die: this orted; 0 for an interrupt
	sig  syscall.Signal
}

var (
	startRanksLine = regexp.MustCompile(`^ *\d+ d(\d+) start ranks \[(.*)\]$`)
	jobDoneLine    = regexp.MustCompile(`^ *\d+ d0 job (\d+) done: status (\d+)$`)
)

func parseScenario(text string) (scenario, error) {
	script, trace, _ := strings.Cut(text, "----\n")
	sc := scenario{routed: "radix", rankMS: 100, graceMS: 3000, ranks: -1,
		rankStatus: map[int]int{}, refuse: map[int]string{}, placement: map[int]int{}, jobStatus: map[int]int{}}
	for _, line := range strings.Split(script, "\n") {
		if err := sc.directive(strings.Fields(line), line); err != nil {
			return sc, err
		}
	}
	if sc.ranks < 0 {
		sc.ranks = sc.nodes
	}
	slices.SortFunc(sc.timed, func(a, b timedEvent) int { return a.at - b.at })
	sc.status = -1
	for _, line := range strings.Split(trace, "\n") {
		sc.outcome(line)
	}
	if sc.status < 0 {
		return sc, fmt.Errorf("the golden trace has no exit status")
	}
	return sc, nil
}

func (sc *scenario) directive(f []string, line string) error {
	if len(f) == 0 || strings.HasPrefix(f[0], "#") {
		return nil
	}
	kv := map[string]string{}
	for _, w := range f[1:] {
		k, v, _ := strings.Cut(w, "=")
		kv[k] = v
	}
	num := func(k string) int { n, _ := strconv.Atoi(kv[k]); return n }
	switch f[0] {
	case "cluster":
		sc.nodes, sc.degree, sc.routed = num("nodes"), num("degree"), cmpOr(kv["routed"], sc.routed)
		_, sc.skip = kv["skip"]
		_, sc.hold = kv["hold"]
		_, sc.step = kv["step"]
		_, sc.dvm = kv["dvm"]
		if _, ok := kv["ranks"]; ok {
			sc.ranks = num("ranks")
		}
		if kv["rank-ms"] == "forever" {
			sc.rankMS = -1
		} else if _, ok := kv["rank-ms"]; ok {
			sc.rankMS = num("rank-ms")
		}
		if _, ok := kv["grace"]; ok {
			sc.graceMS = num("grace")
		}
		sc.timeoutMS, sc.callbackMS, sc.fences = num("timeout"), num("callback"), num("fences")
		for _, k := range []string{"allgathers", "ring"} {
			if _, ok := kv[k]; ok && sc.unsupported == "" {
				sc.unsupported = k
			}
		}
	case "rank":
		r, _ := strconv.Atoi(f[1])
		s, _ := strconv.Atoi(f[3])
		sc.rankStatus[r] = s
	case "refuse":
		n, _ := strconv.Atoi(f[1])
		_, why, _ := strings.Cut(line, `"`)
		sc.refuse[n] = strings.TrimSuffix(strings.TrimSpace(why), `"`)
	case "die":
		n, _ := strconv.Atoi(f[1])
		sc.timed = append(sc.timed, timedEvent{at: num("at"), kill: n})
	case "submit":
		s := dvmSubmit{job: num("job"), at: num("at"), rankMS: num("rank-ms"), status: map[int]int{}}
		if _, ok := kv["rank"]; ok {
			s.status[num("rank")] = num("status")
		}
		if _, ok := kv["nodes"]; ok && sc.unsupported == "" {
			sc.unsupported = "submit nodes="
		}
		sc.submits = append(sc.submits, s)
	case "stop": // at the end of the submits
	case "interrupt":
		sig, ok := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP,
			"TSTP": syscall.SIGTSTP, "CONT": syscall.SIGCONT}[f[1]]
		if !ok {
			sc.unsupported = "interrupt " + f[1]
			return nil
		}
		sc.timed = append(sc.timed, timedEvent{at: num("at"), sig: sig})
	default:
		if sc.unsupported == "" {
			sc.unsupported = f[0]
		}
	}
	return nil
}

// outcome reads one line of the golden trace.
func (sc *scenario) outcome(line string) {
	if m := startRanksLine.FindStringSubmatch(line); m != nil {
		d, _ := strconv.Atoi(m[1])
		for _, r := range strings.Fields(m[2]) {
			n, _ := strconv.Atoi(r)
			sc.placement[n] = d
		}
	}
	if m := jobDoneLine.FindStringSubmatch(line); m != nil {
		job, _ := strconv.Atoi(m[1])
		sc.jobStatus[job], _ = strconv.Atoi(m[2])
	}
	if strings.HasSuffix(line, " d0 stop self") {
		sc.stops++
	}
	if rest, ok := strings.CutPrefix(line, "-- mpirun exit status "); ok {
		sc.status, _ = strconv.Atoi(strings.Fields(rest)[0])
	}
	if rest, ok := strings.CutPrefix(line, "-- stderr: "); ok {
		sc.stderr = append(sc.stderr, rest)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// job is the JobSpec the scenario's mpirun runs.
func (sc scenario) job() protocol.JobSpec {
	return protocol.JobSpec{
		Daemons: sc.nodes + 1, SpawnDegree: sc.degree, Routed: sc.routed, OrtedPath: "orted",
		KillGraceMS: int64(sc.graceMS), Hosts: sim.Hosts(sc.nodes), ID: "driver-test",
		SkipUnreachable: sc.skip, HoldLaunch: sc.hold, NoPMIx: true, OneStep: sc.step,
		Timeouts: timeouts.Timeouts{CallbackMS: int64(sc.callbackMS), PMIDrainMS: 500}.WithDefaults(),
	}
}

// playThroughDriver runs the scenario and checks its outcome.
func playThroughDriver(t *testing.T, sc scenario) {
	c := &cluster{sc: sc, net: NewMemNetwork(), clock: NewManualClock(time.Unix(0, 0)),
		secret: []byte("driver test secret"), started: map[int]int{}, orteds: map[int]*fakeOrted{},
		ranksUp: make(chan struct{}, sc.ranks+1), stopped: make(chan struct{}, 4)}
	var logs lockedBuffer
	c.log = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	defer func() {
		if t.Failed() {
			t.Logf("the daemons' log:\n%s", logs.String())
		}
	}()
	signals := make(chan os.Signal, 4)
	var stdout, stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		code, err := Run(context.Background(), c.mpirunConfig(&stdout, &stderr, signals))
		if err != nil {
			t.Errorf("mpirun: %v", err)
		}
		exit <- code
	}()
	if len(sc.timed) > 0 || sc.timeoutMS > 0 {
		c.awaitRanks(t, sc.ranks)
		c.playTimed(signals)
	}
	var code int
	select {
	case code = <-exit:
	case <-time.After(30 * time.Second):
		t.Fatalf("mpirun did not end; it printed:\n%s", stderr.String())
	}
	c.checkOutcome(t, code, stderr.String())
	c.checkOutput(t, stdout.String())
}

func (c *cluster) mpirunConfig(stdout, stderr *lockedBuffer, signals chan os.Signal) Config {
	sc := c.sc
	nodes := make([]spawn.Node, sc.nodes)
	app := protocol.Launch{Argv: []string{"app"}, StdinRank: 0}
	for i := range nodes {
		nodes[i] = spawn.Node{ID: i + 1, Host: sim.Hosts(sc.nodes)[i+1]}
	}
	for r := range sc.ranks {
		app.RankNode = append(app.RankNode, 1+r%sc.nodes)
	}
	return Config{
		ID: 0, Node: "mpirun", Secret: c.secret, Log: c.log.Named("mpirun"),
		Network: c.net.Host(), Clock: c.clock, Ranks: c.starter(0), Agent: c.rootAgent(),
		Job: sc.job(), Nodes: nodes, App: app, Stdout: stdout, Stderr: stderr,
		StopSelf: func() { c.stopped <- struct{}{} },
		Signals:  signals, Start: c.clock.Now(), Timeout: time.Duration(sc.timeoutMS) * time.Millisecond,
		Remap: func(skipped map[int]bool) ([]int, error) { return remap(sc, skipped) },
	}
}

// remap places the ranks round-robin on the nodes not skipped, as the
// simulator's scenarios do.
func remap(sc scenario, skipped map[int]bool) ([]int, error) {
	var up []int
	for id := 1; id <= sc.nodes; id++ {
		if !skipped[id] {
			up = append(up, id)
		}
	}
	if len(up) == 0 {
		return nil, fmt.Errorf("no node left to run on")
	}
	out := make([]int, sc.ranks)
	for r := range out {
		out[r] = up[r%len(up)]
	}
	return out, nil
}

func (c *cluster) awaitRanks(t *testing.T, n int) {
	for range n {
		select {
		case <-c.ranksUp:
		case <-time.After(30 * time.Second):
			t.Fatalf("the ranks did not all start: %v", c.startedRanks())
		}
	}
}

// playTimed does the scenario's timed events in order, moving the clock
// to the job's --timeout when it comes first.
func (c *cluster) playTimed(signals chan os.Signal) {
	if c.sc.timeoutMS > 0 {
		c.clock.Advance(time.Duration(c.sc.timeoutMS) * time.Millisecond)
	}
	for _, e := range c.sc.timed {
		if e.kill > 0 {
			c.mu.Lock()
			o := c.orteds[e.kill]
			c.mu.Unlock()
			o.Kill()
			continue
		}
		signals <- e.sig
		if e.sig == syscall.SIGTSTP {
			c.awaitStop()
		}
	}
}

// awaitStop waits until mpirun has stopped itself after a Ctrl-Z, so
// that what comes next finds it stopped.
func (c *cluster) awaitStop() {
	select {
	case <-c.stopped:
		c.stops++
	case <-time.After(30 * time.Second):
	}
}

func (c *cluster) startedRanks() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.started)
}

// checkOutcome compares the end of the run with the golden trace's.
func (c *cluster) checkOutcome(t *testing.T, code int, stderr string) {
	sc := c.sc
	if code != sc.status {
		t.Errorf("mpirun exited %d, want %d", code, sc.status)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if stderr == "" {
		lines = nil
	}
	for len(c.stopped) > 0 { // a stop no Ctrl-Z asked for
		<-c.stopped
		c.stops++
	}
	if c.stops != sc.stops {
		t.Errorf("mpirun stopped itself %d times, want %d", c.stops, sc.stops)
	}
	if !slices.Equal(lines, sc.stderr) {
		t.Errorf("mpirun printed %q, want %q", lines, sc.stderr)
	}
	started := c.startedRanks()
	if sc.status == 0 && !maps.Equal(started, sc.placement) {
		t.Errorf("ranks started on %v (rank: daemon), want %v", started, sc.placement)
	}
	for r, d := range started { // a job that fails may start fewer, or others
		want, ok := sc.placement[r]
		if !ok { // the simulator failed the job before it started
			want = 1 + r%sc.nodes
		}
		if d != want {
			t.Errorf("rank %d started on daemon %d, want %d", r, d, want)
		}
	}
	if sc.step && c.groups.Load() != 1 {
		t.Errorf("%d job steps started, want one for all the orteds", c.groups.Load())
	}
	done := make(chan struct{})
	go func() { c.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("orteds left running after mpirun's end")
	}
}

// checkOutput checks that each rank of a job that succeeded wrote its
// line, through its daemon and the tree, to mpirun's stdout.
func (c *cluster) checkOutput(t *testing.T, stdout string) {
	if c.sc.status != 0 {
		return
	}
	for r := range c.sc.ranks {
		if !strings.Contains(stdout, rankLine(r)) {
			t.Errorf("mpirun's stdout lacks %q: %q", rankLine(r), stdout)
		}
	}
}

// lockedBuffer is a buffer written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
