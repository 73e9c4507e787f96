package dvm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"prsh/daemon/protocol"
	"prsh/iof"
)

// fakeDVM answers each copy's Submit with its status once it has run
// its while, or at once with 128+N on a signal N; it checks that no
// daemon runs more ranks at once than its slots.
type fakeDVM struct {
	t      *testing.T
	slots  []int
	status func(n int) int           // copy n's status; n is its program's argument
	hold   func(n int) time.Duration // how long copy n runs
	onRun  func(ran int)             // called as each copy starts, with the count so far

	mu      sync.Mutex
	running []int
	most    int // ranks at once
	ran     []int
}

func (f *fakeDVM) dial() (*Conn, error) {
	client, server := net.Pipe()
	go f.serve(NewConn(server))
	return NewConn(client), nil
}

func (f *fakeDVM) serve(conn *Conn) {
	defer conn.Close()
	var s Submit
	if err := conn.ReadJSON(KindSubmit, &s); err != nil {
		f.t.Errorf("the fake DVM read no Submit: %v", err)
		return
	}
	n, _ := strconv.Atoi(s.App.Argv[0])
	f.start(n, s.App.RankNode)
	signals := make(chan int, 1)
	go func() {
		for {
			kind, payload, err := conn.Read()
			if err != nil {
				return
			}
			var sig Signal
			if kind == KindSignal && json.Unmarshal(payload, &sig) == nil {
				signals <- sig.Sig
				return
			}
		}
	}()
	status := f.status(n)
	select {
	case sig := <-signals:
		status = 128 + sig
	case <-time.After(f.hold(n)):
	}
	f.mu.Lock()
	for _, id := range s.App.RankNode {
		f.running[id]--
	}
	f.mu.Unlock()
	for r := range s.App.RankNode {
		conn.WriteOutput(iof.Chunk{Rank: r, Stream: iof.Stdout, EOF: true})
		conn.WriteOutput(iof.Chunk{Rank: r, Stream: iof.Stderr, EOF: true})
	}
	conn.WriteJSON(KindStatus, Status{status})
}

func (f *fakeDVM) start(n int, rankNode protocol.RankMap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	total := 0
	for _, id := range rankNode {
		if f.running[id]++; f.running[id] > f.slots[id] {
			f.t.Errorf("copy %d: daemon %d runs %d ranks on %d slots", n, id, f.running[id], f.slots[id])
		}
	}
	for _, r := range f.running {
		total += r
	}
	f.most, f.ran = max(f.most, total), append(f.ran, n)
	if f.onRun != nil {
		f.onRun(len(f.ran))
	}
}

// copyPlan places a copy's ranks on the first free slots; with free nil,
// over every host, as many as it needs on each (it runs alone).
func copyPlan(ranks int, hosts []string) func(n int, free []string) (Job, error) {
	return func(n int, free []string) (Job, error) {
		var rankNode protocol.RankMap
		if free == nil {
			for r := range ranks {
				rankNode = append(rankNode, r%len(hosts))
			}
		}
		for _, h := range free {
			name, count, _ := strings.Cut(h, ":")
			c, _ := strconv.Atoi(count)
			for ; c > 0 && len(rankNode) < ranks; c-- {
				rankNode = append(rankNode, slices.Index(hosts, name))
			}
		}
		if len(rankNode) < ranks {
			return Job{}, errors.New("not enough slots")
		}
		app := protocol.Launch{RankNode: rankNode, Argv: []string{strconv.Itoa(n)}}
		return Job{Submit: Submit{App: app}, Stdout: io.Discard, Stderr: os.Stderr}, nil
	}
}

func oneTo(n int) []int {
	numbers := make([]int, n)
	for i := range numbers {
		numbers[i] = i + 1
	}
	return numbers
}

// TestCopiesFitTheSlots: copies run as the slots allow and never more,
// each once; a copy larger than the slots runs alone; the status is the
// first failed copy's, and one line names the failed ones.
func TestCopiesFitTheSlots(t *testing.T) {
	hosts, slots := []string{"n0", "n1", "n2"}, []int{2, 1, 2}
	for _, ranks := range []int{1, 2, 3, 5, 7} {
		f := &fakeDVM{t: t, slots: slots, running: make([]int, 3),
			status: func(n int) int {
				if n%7 == 3 {
					return n
				}
				return 0
			},
			hold: func(n int) time.Duration { return time.Duration(1+n%3) * time.Millisecond }}
		if ranks > 5 {
			f.slots = []int{3, 2, 2} // the copy alone, round robin
		}
		var stderr bytes.Buffer
		c := Copies{Numbers: oneTo(40), Slots: slots, Hosts: hosts, Plan: copyPlan(ranks, hosts),
			Dial: f.dial, Signals: make(chan os.Signal), Stderr: &stderr}
		if status := c.Run(); status != 3 {
			t.Errorf("%d ranks a copy: status %d, want 3 (copy 3's)", ranks, status)
		}
		want := "mpirun: 6 of 40 copies failed: 3 (status 3), 10 (status 10), 17 (status 17), 24 (status 24), 31 (status 31), 38 (status 38)\n"
		if stderr.String() != want {
			t.Errorf("%d ranks a copy: stderr %q, want %q", ranks, stderr.String(), want)
		}
		if len(f.ran) != 40 {
			t.Errorf("%d ranks a copy: %d copies ran, want 40", ranks, len(f.ran))
		}
		if ranks == 1 && f.most != 5 {
			t.Errorf("one rank a copy: at most %d ran at once, want the 5 slots", f.most)
		}
		if ranks > 5 && f.most != ranks {
			t.Errorf("%d ranks a copy: at most %d ranks at once, want one copy's", ranks, f.most)
		}
	}
}

// TestCopiesInterrupted: a Ctrl-C reaches every running copy, no copy
// starts after it, and the status is not 0: copies were left unstarted.
func TestCopiesInterrupted(t *testing.T) {
	hosts := []string{"n0", "n1"}
	sigs := make(chan os.Signal, 1)
	f := &fakeDVM{t: t, slots: []int{1, 1}, running: make([]int, 2),
		status: func(int) int { return 0 },
		hold:   func(int) time.Duration { return time.Minute },
		onRun: func(ran int) {
			if ran == 2 {
				sigs <- syscall.SIGINT
			}
		}}
	var stderr bytes.Buffer
	c := Copies{Numbers: oneTo(9), Slots: []int{1, 1}, Hosts: hosts, Plan: copyPlan(1, hosts), Dial: f.dial, Signals: sigs, Stderr: &stderr}
	if status := c.Run(); status != 130 {
		t.Errorf("status %d after an interrupt, want 130", status)
	}
	if want := "mpirun: 2 of 9 copies failed: 1 (status 130), 2 (status 130); 7 not started\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// TestCopiesPlanError: a copy that cannot be planned fails alone, named.
func TestCopiesPlanError(t *testing.T) {
	hosts := []string{"n0"}
	f := &fakeDVM{t: t, slots: []int{1}, running: make([]int, 1), status: func(int) int { return 0 }, hold: func(int) time.Duration { return 0 }}
	plan := copyPlan(1, hosts)
	var stderr bytes.Buffer
	c := Copies{Numbers: oneTo(4), Slots: []int{1}, Hosts: hosts, Dial: f.dial, Signals: make(chan os.Signal), Stderr: &stderr,
		Plan: func(n int, free []string) (Job, error) {
			if n == 2 {
				return Job{}, errors.New("cannot run /x/2")
			}
			return plan(n, free)
		}}
	if status := c.Run(); status != 2 {
		t.Errorf("status %d, want 2", status)
	}
	want := "mpirun: copy 2: cannot run /x/2\nmpirun: 1 of 4 copies failed: 2 (status 2)\n"
	if stderr.String() != want || len(f.ran) != 3 {
		t.Errorf("stderr %q, %d copies ran; want %q, 3", stderr.String(), len(f.ran), want)
	}
}

// TestCopiesDVMGone: a DVM that no longer answers starts no other copy.
func TestCopiesDVMGone(t *testing.T) {
	hosts := []string{"n0"}
	f := &fakeDVM{t: t, slots: []int{1}, running: make([]int, 1), status: func(int) int { return 0 }, hold: func(int) time.Duration { return 0 }}
	var dials atomic.Int32
	var stderr bytes.Buffer
	c := Copies{Numbers: oneTo(10), Slots: []int{1}, Hosts: hosts, Plan: copyPlan(1, hosts), Signals: make(chan os.Signal), Stderr: &stderr,
		Dial: func() (*Conn, error) {
			if dials.Add(1) > 3 {
				return nil, errors.New("no DVM answers there")
			}
			return f.dial()
		}}
	if status := c.Run(); status != 255 {
		t.Errorf("status %d, want 255", status)
	}
	want := "mpirun: copy 4: no DVM answers there\nmpirun: 1 of 10 copies failed: 4 (status 255); 6 not started\n"
	if stderr.String() != want || dials.Load() != 4 {
		t.Errorf("stderr %q after %d dials; want %q after 4", stderr.String(), dials.Load(), want)
	}
}
