package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTurnOrder: sessions whose goroutines run in any order start in the
// order their turns were handed out.
func TestTurnOrder(t *testing.T) {
	const n = 50
	ctxs := make([]context.Context, n)
	var prev <-chan struct{}
	for i := range ctxs {
		ctxs[i], prev = InTurn(context.Background(), prev)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := takeTurn(ctxs[i]); err != nil {
				t.Error(err)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			PassTurn(ctxs[i])
			PassTurn(ctxs[i]) // a second pass does nothing
		}()
	}
	wg.Wait()
	if !slices.IsSorted(order) {
		t.Errorf("sessions started in the order %v", order)
	}
}

// TestTurnCancelled: a session waiting for its turn gives up with its
// context.
func TestTurnCancelled(t *testing.T) {
	first, _ := InTurn(context.Background(), nil)
	_, prev := InTurn(first, nil)
	ctx, cancel := context.WithCancel(context.Background())
	second, _ := InTurn(ctx, prev)
	cancel()
	if err := takeTurn(second); err != context.Canceled {
		t.Errorf("takeTurn = %v, want %v", err, context.Canceled)
	}
}

// TestCommandSessionsInTurn: a command agent's sessions, launched from
// goroutines that run in reverse, start (fork) in turn: their pids, given
// out in fork order, follow the hosts' order.
func TestCommandSessionsInTurn(t *testing.T) {
	const n = 12
	log := filepath.Join(t.TempDir(), "log")
	c, err := NewCommand(`/bin/sh -c 'echo "$$ $0" >> ` + log + `; exec cat >/dev/null' %h`)
	if err != nil {
		t.Fatal(err)
	}
	ctxs := make([]context.Context, n)
	var prev <-chan struct{}
	for i := range ctxs {
		ctxs[i], prev = InTurn(context.Background(), prev)
	}
	procs := make([]Process, n)
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := c.Start(ctxs[i], "h"+strconv.Itoa(100+i), []string{"x"}, nil)
			PassTurn(ctxs[i])
			if err != nil {
				t.Error(err)
				return
			}
			procs[i] = p
		}()
	}
	wg.Wait()
	for _, p := range procs {
		if p != nil {
			defer p.Close()
		}
	}
	var lines []string
	for deadline := time.Now().Add(10 * time.Second); len(lines) < n && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(log)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	if len(lines) < n {
		t.Fatalf("%d sessions started, want %d", len(lines), n)
	}
	type start struct {
		pid  int
		host string
	}
	var starts []start
	for _, line := range lines {
		pid, host, _ := strings.Cut(line, " ")
		n, _ := strconv.Atoi(pid)
		starts = append(starts, start{n, host})
	}
	slices.SortFunc(starts, func(a, b start) int { return a.pid - b.pid })
	for i, s := range starts {
		if want := "h" + strconv.Itoa(100+i); s.host != want {
			t.Fatalf("sessions by pid: %v, want h100 to h%d in order", starts, 100+n-1)
		}
	}
}
