package iof

import (
	"io"
	"sync"
	"time"
)

// Status is mpirun's stderr with one status line at its bottom: every
// write to mpirun's stderr (the ranks' lines through Terminal, mpirun's
// own, its log) goes through it, so that the line is never mixed into
// them. On a terminal the line is drawn in place ("\r", the line, clear to
// the end of the line), taken away before anything else is written and
// drawn again after it; elsewhere each line shown is a plain line of its
// own, at most one per PlainEvery.
type Status struct {
	mu      sync.Mutex
	w       io.Writer
	inPlace bool
	width   func() int // the terminal's columns; 0 when unknown
	line    string     // the line in place
	drawn   bool       // it is on the terminal now
	midLine bool       // what was written last ended without a newline
	last    time.Time  // when the last plain line was written
}

// PlainEvery is how often a status line is written where it cannot be
// rewritten in place.
const PlainEvery = 5 * time.Second

// NewStatus wraps w. inPlace says w is a terminal; width, if not nil,
// says how many columns it has, so that the line never wraps (a wrapped
// line could not be taken back).
func NewStatus(w io.Writer, inPlace bool, width func() int) *Status {
	return &Status{w: w, inPlace: inPlace, width: width}
}

// Write writes p above the status line.
func (s *Status) Write(p []byte) (int, error) { return s.WriteTo(s.w, p) }

// WriteTo writes p to w, the status line's stream or another one on the
// same terminal (mpirun's stdout), with the status line taken away.
func (s *Status) WriteTo(w io.Writer, p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	n, err := w.Write(p)
	if len(p) > 0 {
		s.midLine = p[len(p)-1] != '\n'
	}
	s.draw()
	return n, err
}

// Show makes line the status line.
func (s *Status) Show(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inPlace {
		if now := time.Now(); s.last.IsZero() || now.Sub(s.last) >= PlainEvery {
			s.last = now
			io.WriteString(s.w, line+"\n")
		}
		return
	}
	s.erase()
	s.line = s.fit(line)
	s.draw()
}

// Clear takes the status line away.
func (s *Status) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	s.line = ""
}

// fit cuts line to the terminal's width, less a column for the cursor.
func (s *Status) fit(line string) string {
	if s.width == nil {
		return line
	}
	if w := s.width(); w > 1 && len(line) >= w {
		return line[:w-1]
	}
	return line
}

func (s *Status) erase() {
	if s.drawn {
		s.drawn = false
		io.WriteString(s.w, "\r\x1b[K")
	}
}

// draw puts the line back, unless the cursor is after an unfinished line
// of output (a rank's last line without a newline), which it would join.
func (s *Status) draw() {
	if s.line != "" && !s.midLine {
		s.drawn = true
		io.WriteString(s.w, s.line+"\x1b[K")
	}
}
