package daemon

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/dvm"
	"prsh/daemon/protocol"
)

// dvmSubmit is a job a DVM scenario submits: its number, when, how long
// its ranks run (0: the scenario's rank-ms), and their exit statuses (by
// rank; absent: 0).
type dvmSubmit struct {
	job, at, rankMS int
	status          map[int]int
}

// playDVMThroughDriver runs a DVM scenario through the driver: mpirun
// --dvm-start over the in-memory cluster, each job submitted in turn by a
// client on the DVM's real socket, the timed events (a daemon's death)
// once the last job's ranks run, then --dvm-stop unless the DVM ended.
// The DVM's exit status, every line it and the clients printed, and each
// job's status must be the golden trace's.
func playDVMThroughDriver(t *testing.T, sc scenario) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	c := &cluster{sc: sc, net: NewMemNetwork(), clock: NewManualClock(time.Unix(0, 0)),
		secret: []byte("driver test secret"), started: map[int]int{}, orteds: map[int]*fakeOrted{},
		ranksUp: make(chan struct{}, sc.ranks*len(sc.submits)+1), stopped: make(chan struct{}, 4)}
	var logs, stdout, stderr lockedBuffer
	c.log = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	defer func() {
		if t.Failed() {
			t.Logf("the daemons' log:\n%s", logs.String())
		}
	}()
	cfg := c.mpirunConfig(&stdout, &stderr, make(chan os.Signal))
	app := cfg.App
	cfg.Job.DVM, cfg.App, cfg.DVM = true, protocol.Launch{StdinRank: protocol.StdinNone}, &DVMConfig{}
	exit := make(chan int, 1)
	go func() {
		code, err := Run(context.Background(), cfg)
		if err != nil {
			t.Errorf("mpirun: %v", err)
		}
		exit <- code
	}()
	var lines []string
	if uri := awaitURI(t, &stdout, exit); uri != "" {
		lines = c.playSubmits(t, uri, app)
		if sc.status == 0 {
			if _, err := dvm.Stop(uri); err != nil {
				t.Errorf("--dvm-stop: %v", err)
			}
		}
	}
	c.checkDVMEnd(t, exit, append(nonEmptyLines(stderr.String()), lines...))
}

// playSubmits submits the scenario's jobs in turn, a job that the
// scenario submits while the one before runs once that one's ranks all
// started (so that the two run at once here too), and checks each one's
// status and output; it returns the lines the clients printed, each
// marked with its job as the golden trace marks them.
func (c *cluster) playSubmits(t *testing.T, uri string, app protocol.Launch) []string {
	c.mu.Lock()
	c.dvmJobs = map[int]dvmSubmit{}
	for _, s := range c.sc.submits {
		c.dvmJobs[s.job] = s
	}
	c.mu.Unlock()
	var lines []string
	var running []dvmSubmit
	results := map[int]chan dvmJobResult{}
	for i, s := range c.sc.submits {
		for len(c.ranksUp) > 0 { // the tokens of the jobs before
			<-c.ranksUp
		}
		done := make(chan dvmJobResult, 1)
		results[s.job] = done
		go func() { done <- submitJob(t, uri, app) }()
		running = append(running, s)
		last := i == len(c.sc.submits)-1
		switch {
		case last && len(c.sc.timed) > 0:
			c.awaitRanks(t, c.sc.ranks)
			c.playTimed(nil)
		case !last && c.sc.submits[i+1].at < s.at+c.rankMSOf(s.job):
			c.awaitRanks(t, c.sc.ranks)
			continue // the next runs beside it
		}
		for _, r := range running {
			lines = append(lines, c.jobResult(t, r.job, results[r.job])...)
		}
		running = nil
	}
	return lines
}

// jobResult waits for job's client, checks what it got, and returns the
// lines it printed, marked with the job.
func (c *cluster) jobResult(t *testing.T, job int, done chan dvmJobResult) []string {
	var res dvmJobResult
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("job %d did not end", job)
	}
	c.checkJob(t, job, res)
	var lines []string
	for _, l := range nonEmptyLines(res.stderr) {
		lines = append(lines, "(job "+strconv.Itoa(job)+") "+l)
	}
	return lines
}

// dvmJobResult is what a client saw of its job.
type dvmJobResult struct {
	status         int
	stdout, stderr string
}

// submitJob runs one client's job as mpirun --dvm does.
func submitJob(t *testing.T, uri string, app protocol.Launch) dvmJobResult {
	conn, _, err := dvm.Dial(uri)
	if err != nil {
		t.Errorf("--dvm: %v", err)
		return dvmJobResult{status: -1}
	}
	var stdout, stderr bytes.Buffer
	signals := make(chan os.Signal)
	defer close(signals)
	status := dvm.Job{Submit: dvm.Submit{App: app}, Stdout: &stdout, Stderr: &stderr, Signals: signals}.Run(conn)
	return dvmJobResult{status, stdout.String(), stderr.String()}
}

// checkJob compares a job's status with the trace's (a job the DVM's
// end cut short has the DVM's), and a job that succeeded has every
// rank's line.
func (c *cluster) checkJob(t *testing.T, job int, res dvmJobResult) {
	want, ok := c.sc.jobStatus[job]
	if !ok {
		want = c.sc.status
	}
	if res.status != want {
		t.Errorf("job %d: status %d, want %d; stderr %q", job, res.status, want, res.stderr)
	}
	for r := range c.sc.ranks {
		if want == 0 && !strings.Contains(res.stdout, rankLine(r)) {
			t.Errorf("job %d's stdout lacks %q: %q", job, rankLine(r), res.stdout)
		}
	}
}

// checkDVMEnd waits for the DVM's exit and its orteds', and compares
// what was printed, in any order, with the trace's.
func (c *cluster) checkDVMEnd(t *testing.T, exit chan int, printed []string) {
	select {
	case code := <-exit:
		if code != c.sc.status {
			t.Errorf("the DVM exited %d, want %d", code, c.sc.status)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the DVM did not end")
	}
	want := slices.Clone(c.sc.stderr)
	slices.Sort(printed)
	slices.Sort(want)
	if !slices.Equal(printed, want) {
		t.Errorf("printed %q, want %q", printed, want)
	}
	done := make(chan struct{})
	go func() { c.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("orteds left running after the DVM's end")
	}
}

// awaitURI waits for the DVM's URI on its stdout; "" if the DVM ended
// before it was up (its status is put back on exit).
func awaitURI(t *testing.T, stdout *lockedBuffer, exit chan int) string {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if line, ok := strings.CutSuffix(stdout.String(), "\n"); ok {
			return line
		}
		select {
		case code := <-exit:
			exit <- code
			return ""
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the DVM did not come up")
		}
	}
}

func nonEmptyLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
