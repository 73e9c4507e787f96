package iof

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"prsh/transport"
)

// patience turns a hang into a failure.
const patience = time.Minute

// recorder is a terminal's stdout or stderr: it keeps every Write apart,
// so that a test can tell how the text was cut.
type recorder struct {
	mu     sync.Mutex
	writes []string
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.writes, "")
}

func (r *recorder) pieces() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

func data(rank int, s Stream, text string) Chunk {
	return Chunk{Rank: rank, Stream: s, Data: []byte(text)}
}

func eof(rank int, s Stream) Chunk { return Chunk{Rank: rank, Stream: s, EOF: true} }

// send passes chunks to a sink, failing the test on an error.
func send(t *testing.T, sink Sink, chunks ...Chunk) {
	t.Helper()
	for _, c := range chunks {
		if err := sink.Send(c); err != nil {
			t.Fatalf("Send(rank %d, %q): %v", c.Rank, c.Data, err)
		}
	}
}

// TestTerminalLines: what reaches the terminal, and in which writes, for
// chunks cut anywhere.
func TestTerminalLines(t *testing.T) {
	tests := []struct {
		name    string
		chunks  []Chunk
		flush   bool
		stdout  []string // the writes, in order
		stderr  []string
		pending bool // something still held back at the end
	}{
		{
			name:   "whole lines are written whole",
			chunks: []Chunk{data(0, Stdout, "a\nbb\n")},
			stdout: []string{"a\nbb\n"},
		},
		{
			name:   "a line cut in chunks is written once complete",
			chunks: []Chunk{data(0, Stdout, "hel"), data(0, Stdout, "lo wor"), data(0, Stdout, "ld\nnext")},
			stdout: []string{"hello world\n"}, pending: true,
		},
		{
			name: "two ranks' partial lines do not mix",
			chunks: []Chunk{
				data(0, Stdout, "rank 0 "), data(1, Stdout, "rank 1 "),
				data(0, Stdout, "says hi\n"), data(1, Stdout, "says ho\n"),
			},
			stdout: []string{"rank 0 says hi\n", "rank 1 says ho\n"},
		},
		{
			name: "stdout and stderr of one rank are held apart",
			chunks: []Chunk{
				data(2, Stdout, "out "), data(2, Stderr, "err "),
				data(2, Stderr, "line\n"), data(2, Stdout, "line\n"),
			},
			stdout: []string{"out line\n"},
			stderr: []string{"err line\n"},
		},
		{
			// Regression: the unfinished last line was once lost at EOF.
			name:   "unfinished last line is written at EOF",
			chunks: []Chunk{data(0, Stdout, "done\nno newline"), eof(0, Stdout)},
			stdout: []string{"done\n", "no newline"},
		},
		{
			name:   "EOF with nothing held writes nothing",
			chunks: []Chunk{data(0, Stdout, "x\n"), eof(0, Stdout), eof(1, Stderr)},
			stdout: []string{"x\n"},
		},
		{
			name:   "a chunk carrying data and EOF",
			chunks: []Chunk{data(0, Stdout, "a"), {Rank: 0, Stream: Stdout, Data: []byte("b\nc"), EOF: true}},
			stdout: []string{"ab\nc"},
		},
		{
			name:   "Flush writes what is held",
			chunks: []Chunk{data(0, Stdout, "zero"), data(1, Stderr, "one")},
			flush:  true,
			stdout: []string{"zero"},
			stderr: []string{"one"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut recorder
			term := NewTerminal(&out, &errOut, Options{})
			send(t, term, tt.chunks...)
			if tt.flush {
				if err := term.Flush(); err != nil {
					t.Fatalf("Flush: %v", err)
				}
			}
			checkWrites(t, "stdout", out.pieces(), tt.stdout)
			checkWrites(t, "stderr", errOut.pieces(), tt.stderr)
			held := 0
			for _, b := range term.pending {
				held += len(b) // empty buffers are kept for reuse
			}
			if got := held > 0; got != tt.pending {
				t.Errorf("something held back: %v, want %v (%v)", got, tt.pending, term.pending)
			}
		})
	}
}

func checkWrites(t *testing.T, name string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("%s writes:\n%s\nwant:\n%s", name, brief(got), brief(want))
	}
}

// brief shows writes with long ones shortened.
func brief(writes []string) string {
	var b strings.Builder
	for _, w := range writes {
		if len(w) > 60 {
			w = fmt.Sprintf("%s…(%d bytes)…%s", w[:20], len(w), w[len(w)-20:])
		}
		fmt.Fprintf(&b, "  %q\n", w)
	}
	return b.String()
}

// TestTerminalInterleaved: many ranks writing lines in arbitrary pieces at
// once; every line comes out whole.
func TestTerminalInterleaved(t *testing.T) {
	var out recorder
	term := NewTerminal(&out, io.Discard, Options{})
	const ranks, lines = 8, 200
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var all strings.Builder
			for i := range lines {
				fmt.Fprintf(&all, "rank %d line %d %s\n", r, i, strings.Repeat("x", i%37))
			}
			text := all.String()
			for len(text) > 0 {
				n := min(len(text), 1+(len(text)*7+r)%61)
				if err := term.Send(data(r, Stdout, text[:n])); err != nil {
					t.Error(err)
				}
				text = text[n:]
			}
			term.Send(eof(r, Stdout))
		}()
	}
	wg.Wait()
	next := make([]int, ranks)
	for _, l := range strings.Split(strings.TrimSuffix(out.text(), "\n"), "\n") {
		var r, i int
		if _, err := fmt.Sscanf(l, "rank %d line %d", &r, &i); err != nil || r < 0 || r >= ranks {
			t.Fatalf("mixed or torn line %q", l)
		}
		if want := fmt.Sprintf("rank %d line %d %s", r, i, strings.Repeat("x", i%37)); l != want || i != next[r] {
			t.Fatalf("line %q, want %q (line %d of rank %d)", l, want, next[r], r)
		}
		next[r]++
	}
	for r, n := range next {
		if n != lines {
			t.Errorf("rank %d: %d lines, want %d", r, n, lines)
		}
	}
}

// TestTerminalLongLine: a line longer than the limit is passed on in
// pieces, so that memory stays bounded; with a prefix every piece has one.
func TestTerminalLongLine(t *testing.T) {
	tests := []struct {
		name   string
		opt    Options
		limit  int
		prefix string
	}{
		{"untagged", Options{}, maxLine, ""},
		{"tagged", Options{Tag: true}, maxTaggedLine, "[1,4]<stdout>:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out recorder
			term := NewTerminal(&out, io.Discard, tt.opt)
			piece := strings.Repeat("y", tt.limit/2+1)
			send(t, term, data(4, Stdout, piece))
			if got := out.text(); got != "" {
				t.Fatalf("%d bytes written before the limit was reached", len(got))
			}
			send(t, term, data(4, Stdout, piece))
			if got := len(out.text()); got < tt.limit {
				t.Fatalf("%d bytes written once the line passed the %d-byte limit, want it all", got, tt.limit)
			}
			send(t, term, data(4, Stdout, piece), data(4, Stdout, "end\n"))
			if got, want := strings.ReplaceAll(out.text(), tt.prefix, ""), strings.Repeat(piece, 3)+"end\n"; got != want {
				t.Fatalf("the long line came out as %d bytes, want %d", len(got), len(want))
			}
			pieces := out.pieces()
			if len(pieces) < 2 {
				t.Fatalf("%d writes, want the line in pieces", len(pieces))
			}
			for i, p := range pieces {
				if !strings.HasPrefix(p, tt.prefix) || strings.Count(p, "[1,") != strings.Count(tt.prefix, "[1,") {
					t.Errorf("piece %d (%d bytes) starts %q, want one prefix %q", i, len(p), p[:min(len(p), 20)], tt.prefix)
				}
			}
		})
	}
}

// TestTerminalPrefixes: the tag formats, alone and together.
func TestTerminalPrefixes(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	tests := []struct {
		name           string
		opt            Options
		stdout, stderr string
	}{
		{"none", Options{}, "a\nb\n", "e\n"},
		{"tag-output", Options{Tag: true}, "[1,3]<stdout>:a\n[1,3]<stdout>:b\n", "[1,3]<stderr>:e\n"},
		{"a copy's", Options{Tag: true, JobOffset: 16}, "[17,3]<stdout>:a\n[17,3]<stdout>:b\n", "[17,3]<stderr>:e\n"},
		{"prepend-rank", Options{PrependRank: true}, "[3] a\n[3] b\n", "[3] e\n"},
		{"timestamp", Options{Timestamp: true}, "2024-05-06T07:08:09.123456 a\n2024-05-06T07:08:09.123456 b\n", "2024-05-06T07:08:09.123456 e\n"},
		{"all", Options{Timestamp: true, Tag: true, PrependRank: true},
			"2024-05-06T07:08:09.123456 [1,3]<stdout>:[3] a\n2024-05-06T07:08:09.123456 [1,3]<stdout>:[3] b\n",
			"2024-05-06T07:08:09.123456 [1,3]<stderr>:[3] e\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut recorder
			term := NewTerminal(&out, &errOut, tt.opt)
			term.now = func() time.Time { return at }
			send(t, term, data(3, Stdout, "a\nb"), data(3, Stderr, "e\n"), data(3, Stdout, "\n"))
			if got := out.text(); got != tt.stdout {
				t.Errorf("stdout %q, want %q", got, tt.stdout)
			}
			if got := errOut.text(); got != tt.stderr {
				t.Errorf("stderr %q, want %q", got, tt.stderr)
			}
		})
	}
}

// TestTerminalFileDir: with --output-filename each rank's streams go to
// DIR/1/rank.R/stdout and stderr, and nothing to the terminal.
func TestTerminalFileDir(t *testing.T) {
	dir := t.TempDir()
	var out, errOut recorder
	term := NewTerminal(&out, &errOut, Options{FileDir: dir})
	send(t, term,
		data(0, Stdout, "zero\n"), data(12, Stdout, "twelve"), data(12, Stderr, "oops\n"),
		data(12, Stdout, " out\nlast"), eof(12, Stdout), eof(12, Stderr), data(0, Stdout, "held"))
	if err := term.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	want := map[string]string{
		"1/rank.0/stdout":  "zero\nheld",
		"1/rank.12/stdout": "twelve out\nlast",
		"1/rank.12/stderr": "oops\n",
	}
	for name, text := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != text {
			t.Errorf("%s = %q, %v; want %q", name, b, err, text)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "1/rank.0/stderr")); !os.IsNotExist(err) {
		t.Errorf("rank 0 wrote no stderr, yet its file exists (%v)", err)
	}
	if out.text()+errOut.text() != "" {
		t.Errorf("the terminal got %q and %q, want nothing", out.text(), errOut.text())
	}
	if len(term.files) != 0 {
		t.Errorf("%d files left open after Flush", len(term.files))
	}
	copyN := NewTerminal(&out, &errOut, Options{FileDir: dir, JobOffset: -1}) // copy 0 of mpirun --cc
	send(t, copyN, data(2, Stdout, "copy 0\n"), eof(2, Stdout))
	if err := copyN.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "0/rank.2/stdout")); err != nil || string(b) != "copy 0\n" {
		t.Errorf("0/rank.2/stdout = %q, %v; want copy 0's line", b, err)
	}
}

// TestTerminalFileDirError: a directory that cannot be made is reported by
// Flush, and Send still returns nil.
func TestTerminalFileDirError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	term := NewTerminal(io.Discard, io.Discard, Options{FileDir: file})
	send(t, term, data(0, Stdout, "x\n"))
	if err := term.Flush(); err == nil {
		t.Error("Flush returned nil after output could not be written under a file")
	}
}

// failing fails every Write and counts them.
type failing struct{ calls int }

var errBroken = errors.New("broken pipe")

func (f *failing) Write(p []byte) (int, error) {
	f.calls++
	return 0, errBroken
}

// TestTerminalWriteError: once the terminal fails, Send keeps returning
// nil and swallows the rest, so that the job still ends; Flush reports it.
func TestTerminalWriteError(t *testing.T) {
	var w failing
	term := NewTerminal(&w, &w, Options{Tag: true})
	for i := range 10 {
		if err := term.Send(data(i%3, Stream(1+i%2), "line\n")); err != nil {
			t.Fatalf("Send %d after a write error: %v, want nil", i, err)
		}
	}
	send(t, term, data(0, Stdout, "held"), eof(1, Stdout))
	if w.calls != 1 {
		t.Errorf("%d writes to a failed terminal, want 1", w.calls)
	}
	if err := term.Flush(); !errors.Is(err, errBroken) {
		t.Errorf("Flush = %v, want the write error", err)
	}
}

// TestSenderReceiver: chunks from many concurrent senders on one stream
// each arrive whole and in order per sender.
func TestSenderReceiver(t *testing.T) {
	pr, pw := io.Pipe()
	s := NewSender(pw)
	const senders, chunks = 16, 100
	payload := func(r, i int) []byte {
		return bytes.Repeat([]byte{byte(r), byte(i)}, (r*131+i*17)%3000)
	}
	var wg sync.WaitGroup
	for r := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 8000)
			for i := range chunks {
				// Reusing the buffer right after Send must be safe.
				buf = append(buf[:0], payload(r, i)...)
				if err := s.Send(Chunk{Rank: r, Stream: Stream(1 + i%2), Data: buf}); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
				clear(buf)
			}
			if err := s.Send(eof(r, Stderr)); err != nil {
				t.Errorf("Send EOF: %v", err)
			}
		}()
	}
	go func() {
		wg.Wait()
		pw.Close()
	}()
	rcv := NewReceiver(pr)
	next := make([]int, senders)
	for {
		c, err := rcv.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if c.Rank < 0 || c.Rank >= senders {
			t.Fatalf("chunk for rank %d", c.Rank)
		}
		i := next[c.Rank]
		switch {
		case i == chunks && c.EOF && c.Stream == Stderr && len(c.Data) == 0:
		case i < chunks && !c.EOF && c.Stream == Stream(1+i%2) && bytes.Equal(c.Data, payload(c.Rank, i)):
		default:
			t.Fatalf("rank %d chunk %d: stream %d, EOF %v, %d bytes; not what was sent", c.Rank, i, c.Stream, c.EOF, len(c.Data))
		}
		next[c.Rank]++
	}
	for r, n := range next {
		if n != chunks+1 {
			t.Errorf("rank %d: %d chunks arrived, want %d", r, n, chunks+1)
		}
	}
}

// TestReceiverRefuses: malformed chunks are errors, not garbage output.
func TestReceiverRefuses(t *testing.T) {
	head := []byte{0, 0, 0, 1, byte(Stdout)}
	tests := []struct {
		name  string
		kind  byte
		parts [][]byte
	}{
		{"unknown kind", 7, [][]byte{head, []byte("x")}},
		{"no header", kindData, [][]byte{{0, 0, 0}}},
		{"unknown stream", kindData, [][]byte{{0, 0, 0, 1, 9}, []byte("x")}},
		{"stream 0", kindEOF, [][]byte{{0, 0, 0, 1, 0}}},
		{"over the limit", kindData, [][]byte{head, make([]byte, ChunkSize+64)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := transport.AppendFrame(nil, tt.kind, tt.parts...)
			if c, err := Receive(bytes.NewReader(frame)); err == nil {
				t.Errorf("Receive accepted it as %+v", c)
			}
		})
	}
	// A full-size chunk is fine.
	var b bytes.Buffer
	NewSender(&b).Send(Chunk{Rank: AllRanks, Stream: StdinStream, Data: make([]byte, ChunkSize)})
	if c, err := Receive(&b); err != nil || c.Rank != AllRanks || len(c.Data) != ChunkSize {
		t.Errorf("full-size chunk: rank %d, %d bytes, %v", c.Rank, len(c.Data), err)
	}
}

// collector is a Sink that keeps copies of what it gets.
type collector struct {
	mu     sync.Mutex
	chunks []Chunk
	fail   error
}

func (c *collector) Send(ch Chunk) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch.Data = append([]byte(nil), ch.Data...)
	c.chunks = append(c.chunks, ch)
	return c.fail
}

// TestPump: the pipe's bytes in order, then EOF.
func TestPump(t *testing.T) {
	text := strings.Repeat("0123456789", 20_000) // several chunks
	var sink collector
	if err := Pump(&sink, 5, Stderr, strings.NewReader(text)); err != nil {
		t.Fatalf("Pump: %v", err)
	}
	var got strings.Builder
	for i, c := range sink.chunks {
		if c.Rank != 5 || c.Stream != Stderr {
			t.Fatalf("chunk %d for rank %d stream %d", i, c.Rank, c.Stream)
		}
		if c.EOF != (i == len(sink.chunks)-1) {
			t.Fatalf("chunk %d of %d has EOF %v: EOF must come last, once", i, len(sink.chunks), c.EOF)
		}
		if len(c.Data) > ChunkSize {
			t.Fatalf("chunk of %d bytes, more than ChunkSize", len(c.Data))
		}
		got.Write(c.Data)
	}
	if got.String() != text {
		t.Errorf("pumped %d bytes, want %d in order", got.Len(), len(text))
	}
}

// TestPumpSinkFails: when the sink fails, Pump still drains the pipe, so
// the rank writing to it is not left blocked, and returns the error.
func TestPumpSinkFails(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wrote := make(chan error, 1)
	go func() {
		// Far more than a pipe holds.
		_, err := w.Write(make([]byte, 4<<20))
		w.Close()
		wrote <- err
	}()
	sink := &collector{fail: errBroken}
	pumped := make(chan error, 1)
	go func() { pumped <- Pump(sink, 0, Stdout, r) }()
	select {
	case err := <-pumped:
		if !errors.Is(err, errBroken) {
			t.Errorf("Pump = %v, want the sink's error", err)
		}
	case <-time.After(patience):
		t.Fatal("Pump did not return after the sink failed")
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Errorf("the writer got %v, want its data drained", err)
		}
	case <-time.After(patience):
		t.Fatal("the writer stayed blocked on a full pipe")
	}
	if len(sink.chunks) != 1 {
		t.Errorf("%d chunks sent to a failed sink, want 1", len(sink.chunks))
	}
}

// TestRelay: chunks from a child's stream pass to the sink; the child's
// clean end is nil, a torn stream is an error.
func TestRelay(t *testing.T) {
	var b bytes.Buffer
	s := NewSender(&b)
	s.Send(data(1, Stdout, "one\n"))
	s.Send(eof(1, Stdout))
	whole := b.Bytes()
	var sink collector
	if err := Relay(&sink, bytes.NewReader(whole)); err != nil {
		t.Fatalf("Relay: %v", err)
	}
	if len(sink.chunks) != 2 || string(sink.chunks[0].Data) != "one\n" || !sink.chunks[1].EOF {
		t.Errorf("relayed %+v", sink.chunks)
	}
	if err := Relay(&collector{}, bytes.NewReader(whole[:len(whole)-2])); err == nil {
		t.Error("Relay of a torn stream returned nil")
	}
	if err := Relay(&collector{fail: errBroken}, bytes.NewReader(whole)); !errors.Is(err, errBroken) {
		t.Errorf("Relay into a failed sink = %v", err)
	}
}

// childStream is the stream to a child daemon, in memory.
type childStream struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

func (c *childStream) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, os.ErrClosed
	}
	return c.buf.Write(p)
}

func (c *childStream) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// chunks decodes what was sent to the child.
func (c *childStream) chunks(t *testing.T) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	r := NewReceiver(bytes.NewReader(c.buf.Bytes()))
	for {
		ch, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("child stream: %v", err)
		}
		if ch.EOF {
			out = append(out, fmt.Sprintf("%d:EOF", ch.Rank))
		} else {
			out = append(out, fmt.Sprintf("%d:%s", ch.Rank, ch.Data))
		}
	}
}

// stdinBed is daemon 0 of this spawn tree, with ranks 0 and 1:
//
//	0 ─┬─ 1                 rank 2
//	   ├─ 2 ── 3 ── 4       ranks 3, 4 on daemon 3, rank 5 on daemon 4
//	   └─ (5) ── 6 ── 7     rank 6 on daemon 7
//
// Node 5 was skipped, so daemon 0 adopted its child 6: its direct
// children are 1, 2 and 6.
type stdinBed struct {
	f      *StdinTree
	pipes  map[int]*os.File // read ends of the local ranks' stdin
	kids   map[int]*childStream
	opened map[int]int
}

func newStdinBed(t *testing.T) *stdinBed {
	t.Helper()
	b := &stdinBed{
		f:      NewStdinTree(0, treeParent(map[int]int{1: 0, 2: 0, 3: 2, 4: 3, 5: 0, 6: 5, 7: 6})),
		pipes:  map[int]*os.File{},
		kids:   map[int]*childStream{},
		opened: map[int]int{},
	}
	b.f.SetRanks([]int{0, 0, 1, 3, 3, 4, 7})
	for _, r := range []int{0, 1} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pr.Close(); pw.Close() })
		b.pipes[r] = pr
		b.f.AddRank(r, pw)
	}
	for _, id := range []int{1, 2, 6} {
		cs := &childStream{}
		b.kids[id] = cs
		b.f.AddChild(id, func() (io.WriteCloser, error) {
			b.opened[id]++
			return cs, nil
		})
	}
	return b
}

// treeParent is the parent function of a spawn tree; -1 above the root.
func treeParent(parents map[int]int) func(int) int {
	return func(d int) int {
		if p, ok := parents[d]; ok {
			return p
		}
		return -1
	}
}

// read reads n bytes of a local rank's stdin.
func (b *stdinBed) read(t *testing.T, rank, n int) string {
	t.Helper()
	p := b.pipes[rank]
	p.SetReadDeadline(time.Now().Add(patience))
	buf := make([]byte, n)
	if _, err := io.ReadFull(p, buf); err != nil {
		t.Fatalf("rank %d's stdin: %v", rank, err)
	}
	return string(buf)
}

func stdin(rank int, text string) Chunk { return data(rank, StdinStream, text) }

// TestStdinTreeRouting: a chunk for a rank reaches its pipe, or the child on
// the way to its daemon; AllRanks reaches everyone.
func TestStdinTreeRouting(t *testing.T) {
	b := newStdinBed(t)
	send(t, b.f, stdin(0, "to zero"), stdin(1, "to one"), stdin(2, "to two"), stdin(3, "to three"),
		stdin(4, "to four"), stdin(5, "to five"), stdin(6, "to six"))
	if got := b.read(t, 0, 7); got != "to zero" {
		t.Errorf("rank 0 read %q", got)
	}
	if got := b.read(t, 1, 6); got != "to one" {
		t.Errorf("rank 1 read %q", got)
	}
	send(t, b.f, stdin(AllRanks, "all"), stdin(99, "nobody"), stdin(-1, "nobody"))
	if got := b.read(t, 0, 3) + b.read(t, 1, 3); got != "allall" {
		t.Errorf("ranks 0 and 1 read %q of the broadcast", got)
	}
	want := map[int][]string{
		1: {"2:to two", fmt.Sprintf("%d:all", AllRanks)},
		2: {"3:to three", "4:to four", "5:to five", fmt.Sprintf("%d:all", AllRanks)},
		6: {"6:to six", fmt.Sprintf("%d:all", AllRanks)},
	}
	for id, w := range want {
		if got := b.kids[id].chunks(t); strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("child %d got %q, want %q", id, got, w)
		}
		if b.opened[id] != 1 {
			t.Errorf("stream to child %d opened %d times, want once", id, b.opened[id])
		}
	}
}

// TestStdinTreeClosedReader: a rank that closed its stdin is dropped; the
// others keep getting their input.
func TestStdinTreeClosedReader(t *testing.T) {
	b := newStdinBed(t)
	b.pipes[1].Close()
	send(t, b.f, stdin(AllRanks, "first"))
	if _, ok := b.f.pipes[jobRank{0, 1}]; ok {
		t.Error("rank 1's pipe is still there after its reader closed")
	}
	send(t, b.f, stdin(AllRanks, "second"), stdin(1, "lost"), stdin(0, "third"))
	if got := b.read(t, 0, len("firstsecondthird")); got != "firstsecondthird" {
		t.Errorf("rank 0 read %q", got)
	}
	if got := len(b.kids[2].chunks(t)); got != 2 {
		t.Errorf("child 2 got %d chunks, want both broadcasts", got)
	}
}

// TestStdinTreeEOF: EOF closes the local pipes and goes on to the children;
// Close closes the streams to the children.
func TestStdinTreeEOF(t *testing.T) {
	b := newStdinBed(t)
	send(t, b.f, stdin(0, "only zero"), Chunk{Rank: AllRanks, Stream: StdinStream, EOF: true})
	for r, p := range b.pipes {
		p.SetReadDeadline(time.Now().Add(patience))
		got, err := io.ReadAll(p)
		if err != nil {
			t.Errorf("rank %d's stdin: %v, want EOF", r, err)
		}
		if want := map[int]string{0: "only zero", 1: ""}[r]; string(got) != want {
			t.Errorf("rank %d read %q, want %q", r, got, want)
		}
	}
	if len(b.f.pipes) != 0 {
		t.Errorf("%d pipes left after EOF", len(b.f.pipes))
	}
	for id, cs := range b.kids {
		if got := cs.chunks(t); len(got) != 1 || got[0] != fmt.Sprintf("%d:EOF", AllRanks) {
			t.Errorf("child %d got %q, want the EOF", id, got)
		}
	}
	b.f.Close()
	for id, cs := range b.kids {
		if !cs.closed {
			t.Errorf("stream to child %d still open after Close", id)
		}
	}
}

// TestStdinTreeEOFOneRank: EOF for one rank closes only its pipe.
func TestStdinTreeEOFOneRank(t *testing.T) {
	b := newStdinBed(t)
	send(t, b.f, Chunk{Rank: 1, Stream: StdinStream, EOF: true}, stdin(0, "still"))
	b.pipes[1].SetReadDeadline(time.Now().Add(patience))
	if got, err := io.ReadAll(b.pipes[1]); err != nil || len(got) != 0 {
		t.Errorf("rank 1 read %q, %v; want EOF at once", got, err)
	}
	if got := b.read(t, 0, 5); got != "still" {
		t.Errorf("rank 0 read %q", got)
	}
}

// TestStdinTreeChildErrors: a child whose stream cannot be opened is an
// error; one that never registered is skipped.
func TestStdinTreeChildErrors(t *testing.T) {
	f := NewStdinTree(0, treeParent(map[int]int{1: 0, 2: 0}))
	f.SetRanks([]int{1, 2})
	f.AddChild(1, func() (io.WriteCloser, error) { return nil, errBroken })
	if err := f.Send(stdin(0, "x")); !errors.Is(err, errBroken) {
		t.Errorf("Send toward a child that cannot be reached = %v, want its error", err)
	}
	if err := f.Send(stdin(1, "x")); err != nil {
		t.Errorf("Send toward a child that never came up = %v, want nil", err)
	}
}

// TestStdinTreeNotATree: input for a daemon that no registered child leads
// to is dropped, even when the parent function loops on itself.
func TestStdinTreeNotATree(t *testing.T) {
	parents := []struct {
		name   string
		parent func(int) int
	}{
		{"outside the subtree", treeParent(map[int]int{1: 0, 2: 9})},
		{"self-loop", func(d int) int { return d }},
	}
	for _, tt := range parents {
		t.Run(tt.name, func(t *testing.T) {
			f := NewStdinTree(0, tt.parent)
			f.SetRanks([]int{2})
			f.AddChild(1, func() (io.WriteCloser, error) { return nil, errBroken })
			done := make(chan error, 1)
			go func() { done <- f.Send(stdin(0, "x")) }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Send = %v, want nil (nowhere to go)", err)
				}
			case <-time.After(patience):
				t.Fatal("Send looped looking for the way down")
			}
		})
	}
}

// FuzzReceiveChunk: whatever comes up a stream, Receiver.Next never
// panics, and what it accepts is a chunk a Sender could have sent.
func FuzzReceiveChunk(f *testing.F) {
	var b bytes.Buffer
	s := NewSender(&b)
	s.Send(data(3, Stdout, "hello\n"))
	s.Send(eof(3, Stdout))
	f.Add(b.Bytes())
	f.Add([]byte{0, 0, 0, 2, 1, 0})
	f.Add(transport.AppendFrame(nil, kindData, []byte{0, 0, 0, 0, 9}))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReceiver(bytes.NewReader(in))
		for {
			c, err := r.Next()
			if err != nil {
				return
			}
			if c.Stream != Stdout && c.Stream != Stderr && c.Stream != StdinStream {
				t.Fatalf("accepted stream %d", c.Stream)
			}
			if len(c.Data) > ChunkSize+64 {
				t.Fatalf("accepted %d bytes", len(c.Data))
			}
			var again bytes.Buffer
			NewSender(&again).Send(c)
			back, err := Receive(&again)
			if err != nil || back.Rank != c.Rank || back.Stream != c.Stream || back.EOF != c.EOF || !bytes.Equal(back.Data, c.Data) {
				t.Fatalf("chunk %+v does not survive a round trip: %+v, %v", c, back, err)
			}
		}
	})
}

// TestTerminalShortLineAfterLongOne: a line that completes a long held one
// and starts a short one in the same chunk must not have the short one
// cut: only what stays held counts against the limit.
func TestTerminalShortLineAfterLongOne(t *testing.T) {
	var out recorder
	term := NewTerminal(&out, io.Discard, Options{})
	long := strings.Repeat("a", maxLine-2)
	send(t, term,
		data(0, Stdout, long), data(0, Stdout, "end\nshort"),
		data(1, Stdout, "other\n"), data(0, Stdout, " line\n"))
	checkWrites(t, "stdout", out.pieces(), []string{long + "end\n", "other\n", "short line\n"})
}

// TestTerminalCutShort: a rank counts as whole once both its streams have
// ended; the first rank that lacks an end is named, whatever came of its
// data.
func TestTerminalCutShort(t *testing.T) {
	term := NewTerminal(io.Discard, io.Discard, Options{})
	send := func(c Chunk) {
		if err := term.Send(c); err != nil {
			t.Fatal(err)
		}
	}
	if r, cut := term.CutShort(0); cut {
		t.Fatalf("no ranks: rank %d cut short", r)
	}
	send(Chunk{Rank: 0, Stream: Stdout, Data: []byte("a\n")})
	send(Chunk{Rank: 0, Stream: Stdout, EOF: true})
	send(Chunk{Rank: 0, Stream: Stderr, EOF: true})
	send(Chunk{Rank: 1, Stream: Stderr, EOF: true})
	send(Chunk{Rank: 1, Stream: Stdout, Data: []byte("tail without its end")})
	if r, cut := term.CutShort(2); !cut || r != 1 {
		t.Fatalf("CutShort(2) = %d, %v; want rank 1", r, cut)
	}
	send(Chunk{Rank: 1, Stream: Stdout, EOF: true})
	if r, cut := term.CutShort(2); cut {
		t.Fatalf("both ranks ended, yet rank %d is cut short", r)
	}
	if r, cut := term.CutShort(3); !cut || r != 2 {
		t.Fatalf("CutShort(3) = %d, %v; want rank 2, which sent nothing", r, cut)
	}
}

// TestLastNewline: lastNewline finds what bytes.LastIndexByte finds, for
// newlines anywhere, none, or only in the part scanned forwards.
func TestLastNewline(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(2000))
		for i := range b {
			b[i] = 'a'
		}
		for range rng.IntN(4) {
			if len(b) > 0 {
				b[rng.IntN(len(b))] = '\n'
			}
		}
		if got, want := lastNewline(b), bytes.LastIndexByte(b, '\n'); got != want {
			t.Fatalf("lastNewline of %d bytes = %d, want %d", len(b), got, want)
		}
	}
}

func BenchmarkLastNewline(b *testing.B) {
	data := make([]byte, 64<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		lastNewline(data)
	}
}

// TestStdinTreeJobs: two DVM jobs' ranks of the same number on one
// daemon each get their own job's input; one job's EOF closes its rank's
// pipe only, and a job forgotten has its pipes closed and takes no more.
func TestStdinTreeJobs(t *testing.T) {
	f := NewStdinTree(0, treeParent(map[int]int{}))
	reads := map[int]*os.File{}
	for job := 1; job <= 2; job++ {
		f.SetJobRanks(job, []int{0})
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		f.Job(job).AddRank(0, pw)
		reads[job] = pr
	}
	send(t, f, Chunk{Job: 1, Stream: StdinStream, Data: []byte("one")}, Chunk{Job: 2, Stream: StdinStream, Data: []byte("two")},
		Chunk{Job: 1, Stream: StdinStream, EOF: true})
	if got, err := io.ReadAll(reads[1]); string(got) != "one" || err != nil {
		t.Errorf("job 1's rank 0 read %q (%v), want one and its end", got, err)
	}
	two := make([]byte, 3)
	if _, err := io.ReadFull(reads[2], two); string(two) != "two" || err != nil {
		t.Errorf("job 2's rank 0 read %q (%v)", two, err)
	}
	f.ForgetJob(2)
	send(t, f, Chunk{Job: 2, Stream: StdinStream, Data: []byte("late")})
	if got, err := io.ReadAll(reads[2]); len(got) != 0 || err != nil {
		t.Errorf("job 2's rank 0 read %q (%v) after its job was forgotten, want its end", got, err)
	}
}

// TestJobChunks: a DVM job's chunks keep their job through a stream
// (frame kinds 3 and 4), beside a plain mpirun's (kinds 1 and 2, as
// before: job 0).
func TestJobChunks(t *testing.T) {
	var wire bytes.Buffer
	s := NewSender(&wire)
	sent := []Chunk{
		{Job: 7, Rank: 3, Stream: Stdout, Data: []byte("seven")},
		{Rank: 1, Stream: Stderr, Data: []byte("plain")},
		{Job: 70000, Rank: 2, Stream: StdinStream, EOF: true},
	}
	for _, c := range sent {
		if err := s.Send(c); err != nil {
			t.Fatal(err)
		}
	}
	if kind := wire.Bytes()[4]; kind != kindJobData {
		t.Errorf("a job's chunk has kind %d, want %d", kind, kindJobData)
	}
	r := NewReceiver(&wire)
	for _, want := range sent {
		got, err := r.Next()
		if err != nil || got.Job != want.Job || got.Rank != want.Rank || got.Stream != want.Stream || string(got.Data) != string(want.Data) || got.EOF != want.EOF {
			t.Errorf("received %+v (%v), want %+v", got, err, want)
		}
	}
}
