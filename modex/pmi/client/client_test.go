package client

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// value is what rank r gives to the allgathers: every byte that could
// trouble a framing, and an empty value for rank 1.
func value(r int) string {
	if r == 1 {
		return ""
	}
	return fmt.Sprintf("v%d;;=\n\x00;x", r)
}

func allValues(n int) []string {
	var vs []string
	for r := range n {
		vs = append(vs, value(r))
	}
	return vs
}

// TestEveryCall: four ranks use every call of the client against Serve
// and a fake job, as a Go program under mpirun would.
func TestEveryCall(t *testing.T) {
	const n = 4
	tj := startJob(t, n)
	tj.eachRank(t, func(c *Client) error {
		r := c.Rank()
		if c.Size() != n || c.AppNum() != 0 || c.JobID() != "kvs_fake" {
			return fmt.Errorf("size %d appnum %d jobid %q", c.Size(), c.AppNum(), c.JobID())
		}
		// Put, Fence, Get
		if err := c.Put("card-"+strconv.Itoa(r), "addr;"+strconv.Itoa(r)); err != nil {
			return err
		}
		if err := c.Fence(); err != nil {
			return err
		}
		for i := range n {
			if v, err := c.Get("card-" + strconv.Itoa(i)); err != nil || v != "addr;"+strconv.Itoa(i) {
				return fmt.Errorf("get card-%d: %q, %v", i, v, err)
			}
		}
		if _, err := c.Get("missing"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("get of a missing key: %v, want ErrNotFound", err)
		}
		// Allgather, twice: rounds do not mix
		for range 2 {
			got, err := c.Allgather(value(r))
			if err != nil || !reflect.DeepEqual(got, allValues(n)) {
				return fmt.Errorf("allgather: %q, %v", got, err)
			}
		}
		// Iallgather + Wait
		req, err := c.Iallgather(value(r))
		if err != nil {
			return err
		}
		if got, err := req.Wait(); err != nil || !reflect.DeepEqual(got, allValues(n)) {
			return fmt.Errorf("iallgather: %q, %v", got, err)
		}
		// Ifence + Wait, with calls made while it is outstanding
		if err := c.Put("early-"+strconv.Itoa(r), "e"); err != nil {
			return err
		}
		fence, err := c.Ifence()
		if err != nil {
			return err
		}
		if err := outstandingRefused(c); err != nil {
			return err
		}
		if err := c.Put("late-"+strconv.Itoa(r), "l"); err != nil { // served after the fence
			return err
		}
		next := strconv.Itoa((r + 1) % n)
		if v, err := c.Get("early-" + next); err != nil || v != "e" { // served after the fence too
			return fmt.Errorf("get during ifence: %q, %v", v, err)
		}
		if _, err := c.Get("late-" + next); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("a put made after ifence was committed by it: %v", err)
		}
		for range 2 { // Wait again returns the same
			if got, err := fence.Wait(); got != nil || err != nil {
				return fmt.Errorf("ifence wait: %q, %v", got, err)
			}
		}
		// Ring, as PMIX_Ring does it, then with counts
		ring, err := c.Ring(1, "v"+strconv.Itoa(r), "v"+strconv.Itoa(r))
		want := Ring{Count: r, Left: fmt.Sprintf("v%d", (r+n-1)%n), Right: "v" + next}
		if err != nil || ring != want {
			return fmt.Errorf("ring: %+v, %v; want %+v", ring, err, want)
		}
		ring, err = c.Ring(r+1, "L", "R")
		if want := (Ring{Count: r * (r + 1) / 2, Left: "R", Right: "L"}); err != nil || ring != want {
			return fmt.Errorf("ring with counts: %+v, %v; want %+v", ring, err, want)
		}
		if err := c.Fence(); err != nil {
			return err
		}
		if _, err := c.Get("late-" + next); err != nil {
			return fmt.Errorf("late put after the next fence: %v", err)
		}
		if err := c.Finalize(); err != nil {
			return err
		}
		if err := c.Put("k", "v"); !errors.Is(err, ErrClosed) {
			return fmt.Errorf("put after finalize: %v, want ErrClosed", err)
		}
		return nil
	})
	for r, served := range tj.served {
		select {
		case err := <-served:
			served <- err
			if err != nil {
				t.Errorf("rank %d: Serve: %v", r, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("rank %d: Serve did not end after finalize", r)
		}
	}
	tj.mu.Lock()
	defer tj.mu.Unlock()
	if tj.finalized != n {
		t.Errorf("%d ranks finalized, want %d", tj.finalized, n)
	}
}

// outstandingRefused checks that no collective starts while one is
// outstanding, and that nothing is sent for it.
func outstandingRefused(c *Client) error {
	_, errIa := c.Iallgather("x")
	_, errIf := c.Ifence()
	_, errAg := c.Allgather("x")
	_, errRing := c.Ring(1, "a", "b")
	for i, err := range []error{c.Fence(), errIa, errIf, errAg, errRing, c.Finalize()} {
		if !errors.Is(err, ErrOutstanding) {
			return fmt.Errorf("call %d with a request outstanding: %v, want ErrOutstanding", i, err)
		}
	}
	return nil
}

// TestIallgatherOverlapsWork: Iallgather returns while the other ranks
// have not even entered; rank 0 computes, then lets them in, and Wait
// gives every value.
func TestIallgatherOverlapsWork(t *testing.T) {
	const n = 3
	tj := startJob(t, n)
	gate := make(chan struct{})
	tj.eachRank(t, func(c *Client) error {
		if c.Rank() != 0 {
			<-gate
			got, err := c.Allgather(value(c.Rank()))
			if err != nil || !reflect.DeepEqual(got, allValues(n)) {
				return fmt.Errorf("allgather: %q, %v", got, err)
			}
			return nil
		}
		req, err := c.Iallgather(value(0))
		if err != nil {
			return err
		}
		for tj.inRound() < 1 { // the server has the request...
			time.Sleep(time.Millisecond)
		}
		sum := 0
		for i := range 1000000 { // ...and the rank works meanwhile
			sum += i % 7
		}
		if req.done || tj.inRound() != 1 {
			return fmt.Errorf("allgather completed with %d ranks in", tj.inRound())
		}
		close(gate)
		got, err := req.Wait()
		if err != nil || !reflect.DeepEqual(got, allValues(n)) {
			return fmt.Errorf("iallgather: %q, %v (work %d)", got, err, sum)
		}
		return nil
	})
}

// TestServerErrors: a request the server refuses is a *ServerError and
// the conversation goes on; limits are checked before anything is sent.
func TestServerErrors(t *testing.T) {
	c := startJob(t, 1).clients[0]
	var se *ServerError
	if err := c.Put("fail", "x"); !errors.As(err, &se) || se.Cmd != "kvs-put" || !strings.Contains(se.Msg, "refused by the test") {
		t.Errorf("refused put: %v", err)
	}
	if _, err := c.call("frobnicate"); !errors.As(err, &se) || se.Msg != "unknown command frobnicate" {
		t.Errorf("unknown command: %v", err)
	}
	for _, err := range []error{
		c.Put("", "v"),
		c.Put(strings.Repeat("k", MaxKey+1), "v"),
		c.Put("k", strings.Repeat("v", MaxValue+1)),
		func() error { _, err := c.Allgather(strings.Repeat("v", MaxRequest)); return err }(),
	} {
		if !errors.Is(err, ErrTooLong) {
			t.Errorf("over a limit: %v, want ErrTooLong", err)
		}
	}
	if got, err := c.Allgather(strings.Repeat(";", MaxRequest/2-64)); err != nil || len(got) != 1 || len(got[0]) != MaxRequest/2-64 {
		t.Errorf("allgather of a long value: %d values, %v", len(got), err)
	}
	if err := c.Finalize(); err != nil {
		t.Errorf("finalize after errors: %v", err)
	}
}

// TestClosedConnection: when the server goes away every call says
// ErrClosed, including the Wait of an outstanding request.
func TestClosedConnection(t *testing.T) {
	tj := startJob(t, 2)
	c := tj.clients[0]
	req, err := c.Iallgather("v")
	if err != nil {
		t.Fatal(err)
	}
	tj.mu.Lock()
	tj.kill[0]()
	tj.mu.Unlock()
	if _, err := req.Wait(); !errors.Is(err, ErrClosed) {
		t.Errorf("wait: %v, want ErrClosed", err)
	}
	if _, err := c.Get("k"); !errors.Is(err, ErrClosed) {
		t.Errorf("get: %v, want ErrClosed", err)
	}
	if err := c.Fence(); !errors.Is(err, ErrClosed) {
		t.Errorf("fence: %v, want ErrClosed", err)
	}
}

// TestAbort: the server gets the status, the launcher "kills" the rank by
// ending its connection, and Abort returns; with a request outstanding it
// returns at once.
func TestAbort(t *testing.T) {
	tj := startJob(t, 2)
	if err := tj.clients[1].Abort(7, "bad input"); err != nil {
		t.Fatalf("abort: %v", err)
	}
	tj.mu.Lock()
	if !reflect.DeepEqual(tj.aborts, []int{7}) {
		t.Errorf("aborts = %v, want [7]", tj.aborts)
	}
	tj.mu.Unlock()
	if err := tj.clients[1].Put("k", "v"); !errors.Is(err, ErrClosed) {
		t.Errorf("put after abort: %v, want ErrClosed", err)
	}

	c := tj.clients[0]
	if _, err := c.Ifence(); err != nil { // never completes: rank 1 is gone
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Abort(3, "") }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("abort with a fence outstanding: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("abort with a fence outstanding hangs")
	}
}

// TestInit: Init reads the environment mpirun sets.
func TestInit(t *testing.T) {
	t.Run("not launched", func(t *testing.T) {
		t.Setenv("PMI_FD", "")
		if _, err := Init(); !errors.Is(err, ErrNotLaunched) {
			t.Errorf("Init: %v, want ErrNotLaunched", err)
		}
	})
	for _, tt := range []struct{ name, fd, rank, size, want string }{
		{"bad PMI_FD", "three", "0", "1", `PMI_FD="three" is not a file descriptor`},
		{"no PMI_RANK", "3", "", "1", `PMI_RANK="" is not a number`},
		{"no PMI_SIZE", "3", "0", "", `PMI_SIZE="" is not a number`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.fd, tt.rank, tt.size)
			if _, err := Init(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Init: %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("not a socket", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		fd, err := syscall.Dup(int(r.Fd())) // Init closes it
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		setEnv(t, strconv.Itoa(fd), "0", "1")
		if _, err := Init(); err == nil || !strings.Contains(err.Error(), "is not a connected socket") {
			t.Errorf("Init: %v", err)
		}
	})
	t.Run("ok", func(t *testing.T) {
		c := initFromEnv(t, 1, "0", "1")
		if c.Rank() != 0 || c.Size() != 1 {
			t.Errorf("rank %d of %d", c.Rank(), c.Size())
		}
		if err := c.Finalize(); err != nil {
			t.Error(err)
		}
	})
	t.Run("size mismatch", func(t *testing.T) {
		_, err := initEnvErr(t, 2, "0", "3")
		if err == nil || !strings.Contains(err.Error(), "the server says rank 0 of 2, but PMI_RANK=0 and PMI_SIZE=3") {
			t.Errorf("Init: %v", err)
		}
	})
}

func setEnv(t *testing.T, fd, rank, size string) {
	t.Setenv("PMI_FD", fd)
	t.Setenv("PMI_RANK", rank)
	t.Setenv("PMI_SIZE", size)
	t.Setenv("PMI_JOBID", "job1")
}

func initFromEnv(t *testing.T, n int, rank, size string) *Client {
	t.Helper()
	c, err := initEnvErr(t, n, rank, size)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// initEnvErr serves rank 0 of an n-rank fake job on a socket whose
// descriptor it passes to Init in PMI_FD.
func initEnvErr(t *testing.T, n int, rank, size string) (*Client, error) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	serveRank(t, newFakeJob(n), 0, fileConn(t, fds[1]))
	setEnv(t, strconv.Itoa(fds[0]), rank, size) // Init takes fds[0] over
	return Init()
}

// TestProtocolErrors: a server this client cannot read ends the client
// with ErrProtocol, whatever the call.
func TestProtocolErrors(t *testing.T) {
	tests := []struct{ name, reply string }{
		{"init reply", "cmd=what\n"},
		{"bad frame length", "cmd=response_to_init rc=0\nxyz   "},
		{"reply to the wrong command", "cmd=response_to_init rc=0\n" + string(mustFrame("kvs-get-response", "rc", "0"))},
		{"item without =", "cmd=response_to_init rc=0\n" + "9     cmd=x;abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := socketPair(t)
			defer b.Close()
			go func() {
				_, _ = b.Write([]byte(tt.reply))
				_, _ = io.Copy(io.Discard, b)
			}()
			if _, err := InitConn(a, 0, ""); !errors.Is(err, ErrProtocol) {
				t.Errorf("InitConn: %v, want ErrProtocol", err)
			}
		})
	}
}

func mustFrame(cmd string, kv ...string) []byte {
	b, err := frame(cmd, kv...)
	if err != nil {
		panic(err)
	}
	return b
}

func TestUnpackValues(t *testing.T) {
	tests := []struct {
		frame string
		want  []string
		bad   bool
	}{
		{"cmd=allgather-response;rc=0;count=3;lengths=5,0,4;values=a;;b=c\x00\n;;x;", []string{"a;b=c", "", "\x00\n;x"}, false},
		{"cmd=allgather-response;rc=0;count=1;lengths=0;values=;", []string{""}, false},
		{"cmd=allgather-response;rc=0;count=2;lengths=1;values=a;", nil, true},
		{"cmd=allgather-response;rc=0;count=1;lengths=2;values=a;", nil, true},
		{"cmd=allgather-response;rc=0;count=1;lengths=1;values=ab;", nil, true},
		{"cmd=allgather-response;rc=0;count=1;lengths=-1;values=a;", nil, true},
		{"cmd=allgather-response;rc=0;count=x;lengths=1;values=a;", nil, true},
		{"cmd=allgather-response;rc=0;", nil, true},
	}
	for _, tt := range tests {
		rep, err := parseFrame(tt.frame)
		if err != nil {
			t.Fatal(err)
		}
		got, err := unpackValues(rep)
		if tt.bad != errors.Is(err, ErrProtocol) || !tt.bad && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %q, %v", tt.frame, got, err)
		}
	}
}

func TestFrame(t *testing.T) {
	got := string(mustFrame("kvs-put", "key", "k", "value", "a;b"))
	if want := "29    cmd=kvs-put;key=k;value=a;;b;"; got != want {
		t.Errorf("frame = %q, want %q", got, want)
	}
	rep, err := parseFrame("cmd=kvs-get-response;found=TRUE;value=;;;rc=0;")
	if v, _ := rep.get("value"); err != nil || rep.cmd != "kvs-get-response" || v != ";" {
		t.Errorf("parseFrame: %+v, %v", rep, err)
	}
}

// FuzzAllgatherReply: values of any bytes, encoded as EXTENSIONS.md says,
// decode to themselves; and whatever a server sends, decoding neither
// panics nor returns values that do not add up to the reply.
func FuzzAllgatherReply(f *testing.F) {
	f.Add("a;b=c||\x00\n;x", "cmd=allgather-response;rc=0;count=3;lengths=5,0,4;values=a;;b=c\x00\n;;x;")
	f.Add(";;|,", "cmd=allgather-response;rc=0;count=1;lengths=0;values=;")
	f.Fuzz(func(t *testing.T, joined, body string) {
		want := strings.Split(joined, "|")
		var lengths []string
		for _, v := range want {
			lengths = append(lengths, strconv.Itoa(len(v)))
		}
		enc := "cmd=allgather-response;rc=0;count=" + strconv.Itoa(len(want)) + ";lengths=" +
			strings.Join(lengths, ",") + ";values=" + strings.ReplaceAll(strings.Join(want, ""), ";", ";;") + ";"
		rep, err := parseFrame(enc)
		if err != nil {
			t.Fatalf("%q: %v", enc, err)
		}
		if got, err := unpackValues(rep); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q decoded to %q, %v", enc, got, err)
		}

		if rep, err = parseFrame(body); err != nil {
			return
		}
		got, err := unpackValues(rep)
		if err != nil {
			return
		}
		all, _ := rep.get("values")
		if strings.Join(got, "") != all {
			t.Fatalf("%q decoded to %q", body, got)
		}
	})
}
