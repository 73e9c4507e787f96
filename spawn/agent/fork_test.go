package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestForkStdinAndExitStatus(t *testing.T) {
	p, err := (&Fork{}).Start(testCtx(t), "localhost",
		[]string{"sh", "-c", `read s; echo "got $s" >&2; exit 3`}, []byte("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	xe := wantExit(t, waitFor(t, p), 3, "got hello")
	if xe.Error() != "exit status 3: got hello" {
		t.Errorf("Error() = %q", xe.Error())
	}
}

func TestForkSuccess(t *testing.T) {
	p, err := (&Fork{}).Start(testCtx(t), "localhost", []string{"true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, p); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if err := closeAndWait(t, p); err != nil {
		t.Errorf("Wait after Close: %v", err)
	}
	p.Close() // twice is fine
}

// TestForkLifeline: stdin stays open after the payload, and Close closes
// it, which is how the daemon learns that its parent is gone.
func TestForkLifeline(t *testing.T) {
	checkLifeline(t, &Fork{}, "localhost")
	checkKill(t, &Fork{}, "localhost")
}

// assertRunning checks that the command has not seen EOF on its stdin: a
// closed lifeline would make eofFile appear and Wait return. It cannot
// prove a negative, but it cannot fail spuriously either.
func assertRunning(t *testing.T, p Process, eofFile string) {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(eofFile); err == nil {
		t.Fatal("stdin reached EOF before Close")
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }() // ends once the test closes p
	select {
	case <-done:
		t.Fatal("command ended before Close")
	default:
	}
}

// TestForkCloseKills: a command that ignores its lifeline is killed after
// the grace period, so nothing is left behind.
func TestForkCloseKills(t *testing.T) {
	dir := t.TempDir()
	p, err := (&Fork{}).Start(testCtx(t), "localhost",
		[]string{"sh", "-c", `echo up > ` + dir + `/up; exec sleep 600`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "up"))
	xe := wantExit(t, closeAndWait(t, p), 128+9, "")
	if xe.Signal != "KILL" || xe.Error() != "signal KILL" {
		t.Errorf("got %+v (%q), want signal KILL", xe, xe.Error())
	}
}

func TestForkNotFound(t *testing.T) {
	_, err := (&Fork{}).Start(testCtx(t), "localhost", []string{"/nonexistent/orted"}, nil)
	wantErr(t, err, "/nonexistent/orted")
	_, err = (&Fork{}).Start(testCtx(t), "localhost", nil, nil)
	wantErr(t, err, "empty argv")
}

// TestForkStdinRefused: when the command dies without reading a payload
// bigger than a pipe buffer, Launch reports the command's exit, not EPIPE.
func TestForkStdinRefused(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1<<20)
	_, err := (&Fork{}).Start(testCtx(t), "localhost",
		[]string{"sh", "-c", `echo "orted: bad payload" >&2; exit 7`}, big)
	wantExit(t, err, 7, "orted: bad payload")
}

// TestForkBigPayload: a payload bigger than a pipe buffer is delivered.
func TestForkBigPayload(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	p, err := (&Fork{}).Start(testCtx(t), "localhost",
		[]string{"sh", "-c", `head -c 1048576 | wc -c >&2; exit 1`}, big)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wantExit(t, waitFor(t, p), 1, "1048576")
}

// TestForkContext: ctx bounds the start, here a payload write that cannot
// finish; the command is ended rather than left behind.
func TestForkContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Fork{}).Start(ctx, "localhost", []string{"true"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: got %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	big := bytes.Repeat([]byte("x"), 1<<20)
	_, err := (&Fork{}).Start(ctx, "localhost", []string{"sleep", "600"}, big)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stalled payload: got %v, want DeadlineExceeded", err)
	}
}

func TestExitErrorText(t *testing.T) {
	tests := []struct {
		e    ExitError
		want string
	}{
		{ExitError{Status: 127, Stderr: "sh: 1: /x/orted: not found"}, "exit status 127: sh: 1: /x/orted: not found"},
		{ExitError{Status: 1}, "exit status 1"},
		{ExitError{Status: 143, Signal: "TERM"}, "signal TERM"},
		{ExitError{Status: -1, Stderr: "x"}, "exited without exit status: x"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestTail(t *testing.T) {
	tl := newTail(nil, "stderr")
	tl.Write([]byte("  short\n"))
	if got := tl.String(); got != "short" {
		t.Errorf("got %q", got)
	}
	tl.Write(bytes.Repeat([]byte("0123456789\n"), 1000))
	tl.Write([]byte("last line\n"))
	got := tl.String()
	if len(got) > stderrTail || !bytes.HasSuffix([]byte(got), []byte("0123456789\nlast line")) ||
		!bytes.HasPrefix([]byte(got), []byte("0123456789\n")) {
		t.Errorf("tail: len %d, %q…", len(got), got[:20])
	}
}
