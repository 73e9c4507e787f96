package iof

import (
	"bytes"
	"io"
	"sync"
)

// maxLine bounds how much of an unfinished line is held back: a rank that
// writes megabytes without a newline is passed through in pieces.
const maxLine = 64 << 10

// Terminal writes chunks to mpirun's stdout and stderr. It writes whole
// lines, so that two ranks' lines are never mixed within a line; a rank's
// unfinished last line is written when its stream ends.
type Terminal struct {
	mu      sync.Mutex
	out     map[Stream]io.Writer
	pending map[key][]byte
	err     error
}

type key struct {
	rank   int
	stream Stream
}

// NewTerminal writes to stdout and stderr.
func NewTerminal(stdout, stderr io.Writer) *Terminal {
	return &Terminal{
		out:     map[Stream]io.Writer{Stdout: stdout, Stderr: stderr},
		pending: map[key][]byte{},
	}
}

// Send writes what is complete of a chunk. It blocks while the terminal
// blocks, which is how backpressure reaches the ranks.
func (t *Terminal) Send(c Chunk) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := key{c.Rank, c.Stream}
	buf := append(t.pending[k], c.Data...)
	var ready []byte
	if c.EOF {
		ready, buf = buf, nil
	} else if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		ready, buf = buf[:i+1], buf[i+1:]
	}
	if len(buf) > maxLine {
		ready, buf = append(ready, buf...), nil
	}
	t.keep(k, buf)
	if len(ready) > 0 && t.err == nil {
		_, t.err = t.out[c.Stream].Write(ready)
	}
	return nil
}

func (t *Terminal) keep(k key, rest []byte) {
	if len(rest) == 0 {
		delete(t.pending, k)
		return
	}
	t.pending[k] = append([]byte(nil), rest...)
}

// Flush writes every unfinished line, for when the job ends abruptly.
func (t *Terminal) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, buf := range t.pending {
		if t.err == nil {
			_, t.err = t.out[k.stream].Write(buf)
		}
		delete(t.pending, k)
	}
}
