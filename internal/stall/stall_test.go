package stall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"prsh/internal/stall/stalltest"
)

const (
	bound   = 2 * time.Second
	stopFor = 3 * time.Second
)

// TestStallIsNotCounted: a process is stopped for 3 s while a 2 s timer
// runs, as a machine so loaded that nothing runs for seconds stops a
// daemon. A plain timer would fire as soon as the process runs again;
// this one fires once 2 s have passed in which the process ran.
func TestStallIsNotCounted(t *testing.T) {
	if stalltest.Child() {
		timeThroughStall()
		return
	}
	said := stalltest.Stop(t, "TestStallIsNotCounted", "armed", stopFor)
	var firedMS, lostMS int64
	if len(said) == 0 {
		t.Fatal("child said nothing")
	}
	if _, err := fmt.Sscanf(said[0], "fired after %dms, lost %dms", &firedMS, &lostMS); err != nil {
		t.Fatalf("child said %q: %v", said, err)
	}
	fired, lost := time.Duration(firedMS)*time.Millisecond, time.Duration(lostMS)*time.Millisecond
	// The meter misses at most a Tick of the stop (the part before its
	// last wake); the timer may fire later, never earlier.
	if want := bound + stopFor - Tick; fired < want-time.Millisecond || lost < stopFor-Tick-time.Millisecond {
		t.Errorf("child: %q; want the timer fired after %v at least, %v lost", said[0], want, stopFor-Tick)
	}
}

// timeThroughStall arms a timer, says so, and reports when it fired and
// how much time the meter saw lost.
func timeThroughStall() {
	start := time.Now()
	done := make(chan time.Duration)
	AfterFunc(bound, func() { done <- time.Since(start) })
	time.Sleep(2 * Tick) // the meter has woken since it started
	os.Stdout.WriteString("armed\n")
	fired := <-done
	fmt.Printf("fired after %dms, lost %dms\n", fired.Milliseconds(), Lost().Milliseconds())
}

// TestTimerFires: without a stall a timer fires after its duration.
func TestTimerFires(t *testing.T) {
	start := time.Now()
	done := make(chan time.Duration, 1)
	AfterFunc(50*time.Millisecond, func() { done <- time.Since(start) })
	if d := <-done; d < 50*time.Millisecond {
		t.Errorf("fired after %v, want 50ms at least", d)
	}
}

// TestExcuseEndsAtStretch: an excuse that always holds (bytes a reader
// never reads) delays a timer to Stretch durations, not for ever.
func TestExcuseEndsAtStretch(t *testing.T) {
	const d = 100 * time.Millisecond
	start := time.Now()
	done := make(chan time.Duration, 1)
	Unless(d, func() bool { return true }, func() { done <- time.Since(start) })
	if got := <-done; got < Stretch*d {
		t.Errorf("fired after %v, want %v at least", got, Stretch*d)
	}
}

// TestStopReports: Stop says whether the function was called, and a
// stopped timer's function is not.
func TestStopReports(t *testing.T) {
	ran := make(chan bool, 1)
	early := AfterFunc(time.Hour, func() { ran <- true })
	if !early.Stop() {
		t.Error("Stop of a pending timer reported the function called")
	}
	late := AfterFunc(time.Millisecond, func() { ran <- true })
	<-ran
	if late.Stop() {
		t.Error("Stop after the function ran reported it was not called")
	}
	select {
	case <-ran:
		t.Error("a stopped timer's function ran")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestWithTimeoutIsADeadline: the context ends as context.WithTimeout's
// does, so callers and net's dials word it as a timeout.
func TestWithTimeoutIsADeadline(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("Err %v, want DeadlineExceeded", ctx.Err())
	}
	parent, stop := context.WithCancel(context.Background())
	ctx, cancel = WithTimeout(parent, time.Hour)
	defer cancel()
	stop()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "deadline") {
		t.Errorf("Err %v after the parent's cancel, want Canceled", err)
	}
}
