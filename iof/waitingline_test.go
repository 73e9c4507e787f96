package iof

import (
	"bytes"
	"testing"
)

// On a terminal the line is drawn in place, taken away before any other
// write (to stderr, or to stdout through Terminal) and drawn again after,
// cut to the terminal's width, and gone after Clear.
func TestWaitingLineInPlace(t *testing.T) {
	var tty bytes.Buffer // stdout and stderr on one terminal
	wl := NewWaitingLine(&tty, true, func() int { return 20 })
	term := NewTerminal(&tty, wl, Options{})
	wl.Show("waiting for node005 and 3 more")
	term.Send(Chunk{Rank: 0, Stream: Stdout, Data: []byte("hello\n")})
	wl.Write([]byte("mpirun: warning: x\n"))
	wl.Show("waiting for node005")
	wl.Clear()
	term.Send(Chunk{Rank: 0, Stream: Stdout, Data: []byte("bye\n")})
	want := "waiting for node005\x1b[K" + // 19 columns of 20
		"\r\x1b[Khello\nwaiting for node005\x1b[K" +
		"\r\x1b[Kmpirun: warning: x\nwaiting for node005\x1b[K" +
		"\r\x1b[Kwaiting for node005\x1b[K" +
		"\r\x1b[K" +
		"bye\n"
	if got := tty.String(); got != want {
		t.Errorf("terminal got\n%q\nwant\n%q", got, want)
	}
}

// A rank's unfinished last line is not joined by the waiting line: it
// comes back once a newline ends that line.
func TestWaitingLineAfterUnfinishedLine(t *testing.T) {
	var tty bytes.Buffer
	wl := NewWaitingLine(&tty, true, nil)
	wl.Show("waiting")
	wl.WriteTo(&tty, []byte("no newline"))
	wl.Show("waiting still")
	wl.WriteTo(&tty, []byte("\n"))
	if got, want := tty.String(), "waiting\x1b[K\r\x1b[Kno newline\nwaiting still\x1b[K"; got != want {
		t.Errorf("terminal got %q, want %q", got, want)
	}
}

// Not on a terminal, a shown line is a plain line, at most one per
// PlainEvery, and Clear writes nothing.
func TestWaitingLinePlain(t *testing.T) {
	var out bytes.Buffer
	wl := NewWaitingLine(&out, false, nil)
	wl.Show("waiting for node005")
	wl.Show("waiting for node005 again") // within PlainEvery
	wl.Write([]byte("other\n"))
	wl.Clear()
	if got, want := out.String(), "waiting for node005\nother\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
