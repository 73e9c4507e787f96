package pmi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Scripts in testdata/*.script replay the client side of real traffic
// (testdata/traces.txt and WIRE.md) against Serve, one
// connection per rank, all ranks at once over a shared memJob, and check
// every reply byte for byte. Each line is one step:
//
//	job size=2 kvsname=K mapping=M universe=N nodes=0,0   the job (first line);
//	    also spawner=J (JobInfo.Spawner) and failspawn=1 (every Spawn fails)
//	r0 -> PAYLOAD      rank 0 sends PAYLOAD
//	r0 <- PAYLOAD      rank 0 must receive exactly PAYLOAD next
//	r0 -> EOF          rank 0 closes its end
//	r0 <- EOF          Serve must have closed the connection
//	r0 silent          no reply may come within 100 ms
//	r0 serve RESULT    Serve returned ok, closed-early, aborted or protocol
//	check aborts=7 finalized=2 fences=4   after every rank is done; also
//	    parked, spawns (Spawn calls that succeeded), names (still published)
//
// A PAYLOAD that starts with a digit or a space is a PMI-2 frame, sent as
// is; anything else is a PMI-1 line and gets its newline added. Go escapes
// (\x00, \n, \\) stand for bytes. Ranks run concurrently, so only the order
// within one rank is fixed; the fences order the rest. Each rank talks
// over a socket pair, which buffers: a rank may send several requests
// before it reads a reply, as the non-blocking extensions do.
func TestScripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.script")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".script"), func(t *testing.T) {
			t.Parallel()
			runScript(t, p)
		})
	}
}

type step struct {
	line  int
	op    string // "->", "<-", "silent", "serve"
	arg   string
	isEOF bool
}

type script struct {
	info  JobInfo
	nodes []int
	// failSpawn makes every spawn fail (job field failspawn=1).
	failSpawn bool
	ranks     [][]step
	check     map[string]int
}

func runScript(t *testing.T, path string) {
	sc := readScript(t, path)
	job := newMemJob(sc.info, sc.nodes)
	if sc.failSpawn {
		job.spawnErr = errNoSlots
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	served := make([]chan error, len(sc.ranks))
	var wg, serving sync.WaitGroup
	defer func() { cancel(); serving.Wait() }() // no log line from Serve may outlive the test
	for r, steps := range sc.ranks {
		client, server := socketPair(t)
		served[r] = make(chan error, 1)
		serving.Add(1)
		go func() {
			defer serving.Done()
			served[r] <- Serve(ctx, server, job.rank(r), testLogger(t))
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer client.Close()
			if err := playRank(client, steps, served[r]); err != nil {
				t.Errorf("%s: rank %d: %v", path, r, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	cancel()
	serving.Wait()
	checkJob(t, job, sc.check)
}

// playRank performs one rank's steps on its end of the connection.
// A "<- EOF" after the rank's own "-> EOF" holds trivially: the traces
// log both ends closing, in either order.
func playRank(c net.Conn, steps []step, served chan error) error {
	closed := false
	for _, s := range steps {
		if s.op == "<-" && s.isEOF && closed {
			continue
		}
		closed = closed || s.op == "->" && s.isEOF
		if err := playStep(c, s, served); err != nil {
			return fmt.Errorf("line %d (%s %q): %w", s.line, s.op, clip(s.arg), err)
		}
	}
	return nil
}

func playStep(c net.Conn, s step, served chan error) error {
	switch {
	case s.op == "->" && s.isEOF:
		return c.Close()
	case s.op == "->":
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, err := c.Write([]byte(s.arg))
		return err
	case s.op == "<-" && s.isEOF:
		_ = c.SetReadDeadline(time.Now().Add(replyWait))
		if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			return fmt.Errorf("want EOF, got %d bytes, %v", n, err)
		}
		return nil
	case s.op == "<-":
		return expect(c, s.arg)
	case s.op == "silent":
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, err := c.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("want silence, got %d bytes, %v", n, err)
		}
		return nil
	case s.op == "serve":
		return expectServe(served, s.arg)
	}
	return fmt.Errorf("unknown step")
}

// replyWait bounds the wait for a reply or an EOF: generous, since a
// loaded machine under the race detector took over 5 s to build a 1 MB
// reply (CI).
const replyWait = time.Minute

// expect reads exactly len(want) bytes and compares.
func expect(c net.Conn, want string) error {
	_ = c.SetReadDeadline(time.Now().Add(replyWait))
	got := make([]byte, len(want))
	n, err := io.ReadFull(c, got)
	if err != nil {
		return fmt.Errorf("got %q then %v", got[:n], err)
	}
	if string(got) != want {
		return fmt.Errorf("got %q", got)
	}
	return nil
}

// serveResults names the ways Serve can end.
var serveResults = map[string]func(error) bool{
	"ok":           func(err error) bool { return err == nil },
	"closed-early": func(err error) bool { return errors.Is(err, ErrClosedEarly) },
	"aborted":      func(err error) bool { return errors.Is(err, ErrAborted) },
	"protocol":     func(err error) bool { return errors.Is(err, ErrProtocol) },
}

func expectServe(served chan error, want string) error {
	match, ok := serveResults[want]
	if !ok {
		return fmt.Errorf("unknown result %q", want)
	}
	select {
	case err := <-served:
		if !match(err) {
			return fmt.Errorf("Serve returned %v", err)
		}
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("Serve did not return")
	}
}

func checkJob(t *testing.T, job *memJob, check map[string]int) {
	job.mu.Lock()
	defer job.mu.Unlock()
	got := map[string]int{"finalized": job.finalized, "fences": job.fences, "parked": job.parked,
		"spawns": len(job.spawns), "names": len(job.names)}
	if len(job.aborts) > 0 {
		got["aborts"] = job.aborts[0]
	}
	for k, want := range check {
		if got[k] != want {
			t.Errorf("%s = %d, want %d", k, got[k], want)
		}
	}
}

func readScript(t testing.TB, path string) script {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sc script
	sc.check = map[string]int{}
	sn := bufio.NewScanner(f)
	sn.Buffer(nil, 1<<20)
	for n := 1; sn.Scan(); n++ {
		if err := sc.addLine(n, sn.Text()); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
	}
	if sc.info.Size != len(sc.ranks) {
		t.Fatalf("%s: job size %d but steps for %d ranks", path, sc.info.Size, len(sc.ranks))
	}
	return sc
}

func (sc *script) addLine(n int, line string) error {
	switch {
	case line == "" || strings.HasPrefix(line, "#"):
		return nil
	case strings.HasPrefix(line, "job "):
		return sc.job(strings.Fields(line)[1:])
	case strings.HasPrefix(line, "check "):
		for _, f := range strings.Fields(line)[1:] {
			k, v, _ := strings.Cut(f, "=")
			i, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			sc.check[k] = i
		}
		return nil
	}
	return sc.rankStep(n, line)
}

func (sc *script) job(fields []string) error {
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "size":
			sc.info.Size, err = strconv.Atoi(v)
		case "universe":
			sc.info.UniverseSize, err = strconv.Atoi(v)
		case "appnum":
			sc.info.AppNum, err = strconv.Atoi(v)
		case "kvsname":
			sc.info.KVSName = v
		case "mapping":
			sc.info.ProcessMapping = v
		case "spawner":
			sc.info.Spawner = v
		case "failspawn":
			sc.failSpawn = v == "1"
		case "nodes":
			for _, s := range strings.Split(v, ",") {
				i, err := strconv.Atoi(s)
				if err != nil {
					return err
				}
				sc.nodes = append(sc.nodes, i)
			}
		default:
			return fmt.Errorf("unknown job field %q", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (sc *script) rankStep(n int, line string) error {
	head, rest, _ := strings.Cut(line, " ")
	r, err := strconv.Atoi(strings.TrimPrefix(head, "r"))
	if err != nil || !strings.HasPrefix(head, "r") {
		return fmt.Errorf("want rN at the start of %q", line)
	}
	op, arg, _ := strings.Cut(rest, " ")
	s := step{line: n, op: op, arg: arg, isEOF: arg == "EOF"}
	if (op == "->" || op == "<-") && !s.isEOF {
		if s.arg, err = payload(arg); err != nil {
			return err
		}
	}
	for len(sc.ranks) <= r {
		sc.ranks = append(sc.ranks, nil)
	}
	sc.ranks[r] = append(sc.ranks[r], s)
	return nil
}

// payload decodes a step's bytes: Go escapes, and a newline for PMI-1.
func payload(arg string) (string, error) {
	s, err := strconv.Unquote(`"` + strings.ReplaceAll(arg, `"`, `\"`) + `"`)
	if err != nil {
		return "", fmt.Errorf("bad escapes in %q: %w", arg, err)
	}
	if s != "" && (s[0] == ' ' || s[0] >= '0' && s[0] <= '9') {
		return s, nil
	}
	return s + "\n", nil
}
