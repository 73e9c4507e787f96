package iof

import (
	"io"
	"sync"
	"time"
)

// WaitingLine is mpirun's stderr with the launch's waiting line ("mpirun:
// 61 of 64 daemons called back; waiting for node005") at its bottom: every
// write to mpirun's stderr (the ranks' lines through Terminal, mpirun's
// own, its log) goes through it, so that the line is never mixed into
// them. On a terminal the line is drawn in place ("\r", the line, clear to
// the end of the line), taken away before anything else is written and
// drawn again after it; elsewhere each line shown is a plain line of its
// own, at most one per PlainEvery.
type WaitingLine struct {
	mu      sync.Mutex
	w       io.Writer
	inPlace bool
	width   func() int // the terminal's columns; 0 when unknown
	line    string     // the line in place
	drawn   bool       // it is on the terminal now
	midLine bool       // what was written last ended without a newline
	last    time.Time  // when the last plain line was written
}

// PlainEvery is how often the waiting line is written where it cannot be
// rewritten in place.
const PlainEvery = 5 * time.Second

// NewWaitingLine wraps w. inPlace says w is a terminal; width, if not nil,
// says how many columns it has, so that the line never wraps (a wrapped
// line could not be taken back).
func NewWaitingLine(w io.Writer, inPlace bool, width func() int) *WaitingLine {
	return &WaitingLine{w: w, inPlace: inPlace, width: width}
}

// Write writes p above the waiting line.
func (l *WaitingLine) Write(p []byte) (int, error) { return l.WriteTo(l.w, p) }

// WriteTo writes p to w, the waiting line's stream or another one on the
// same terminal (mpirun's stdout), with the waiting line taken away.
func (l *WaitingLine) WriteTo(w io.Writer, p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.erase()
	n, err := w.Write(p)
	if len(p) > 0 {
		l.midLine = p[len(p)-1] != '\n'
	}
	l.draw()
	return n, err
}

// Show makes line the waiting line.
func (l *WaitingLine) Show(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.inPlace {
		if now := time.Now(); l.last.IsZero() || now.Sub(l.last) >= PlainEvery {
			l.last = now
			io.WriteString(l.w, line+"\n")
		}
		return
	}
	l.erase()
	l.line = l.fit(line)
	l.draw()
}

// Clear takes the waiting line away.
func (l *WaitingLine) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.erase()
	l.line = ""
}

// fit cuts line to the terminal's width, less a column for the cursor.
func (l *WaitingLine) fit(line string) string {
	if l.width == nil {
		return line
	}
	if w := l.width(); w > 1 && len(line) >= w {
		return line[:w-1]
	}
	return line
}

func (l *WaitingLine) erase() {
	if l.drawn {
		l.drawn = false
		io.WriteString(l.w, "\r\x1b[K")
	}
}

// draw puts the line back, unless the cursor is after an unfinished line
// of output (a rank's last line without a newline), which it would join.
func (l *WaitingLine) draw() {
	if l.line != "" && !l.midLine {
		l.drawn = true
		io.WriteString(l.w, l.line+"\x1b[K")
	}
}
