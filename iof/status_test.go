package iof

import (
	"bytes"
	"testing"
)

// On a terminal the line is drawn in place, taken away before any other
// write (to stderr, or to stdout through Terminal) and drawn again after,
// cut to the terminal's width, and gone after Clear.
func TestStatusInPlace(t *testing.T) {
	var tty bytes.Buffer // stdout and stderr on one terminal
	s := NewStatus(&tty, true, func() int { return 20 })
	term := NewTerminal(&tty, s, Options{})
	s.Show("waiting for node005 and 3 more")
	term.Send(Chunk{Rank: 0, Stream: Stdout, Data: []byte("hello\n")})
	s.Write([]byte("mpirun: warning: x\n"))
	s.Show("waiting for node005")
	s.Clear()
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

// A rank's unfinished last line is not joined by the status line: it
// comes back once a newline ends that line.
func TestStatusAfterUnfinishedLine(t *testing.T) {
	var tty bytes.Buffer
	s := NewStatus(&tty, true, nil)
	s.Show("waiting")
	s.WriteTo(&tty, []byte("no newline"))
	s.Show("waiting still")
	s.WriteTo(&tty, []byte("\n"))
	if got, want := tty.String(), "waiting\x1b[K\r\x1b[Kno newline\nwaiting still\x1b[K"; got != want {
		t.Errorf("terminal got %q, want %q", got, want)
	}
}

// Not on a terminal, a shown line is a plain line, at most one per
// PlainEvery, and Clear writes nothing.
func TestStatusPlain(t *testing.T) {
	var out bytes.Buffer
	s := NewStatus(&out, false, nil)
	s.Show("waiting for node005")
	s.Show("waiting for node005 again") // within PlainEvery
	s.Write([]byte("other\n"))
	s.Clear()
	if got, want := out.String(), "waiting for node005\nother\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
