package iof

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options decide how mpirun presents the ranks' output.
type Options struct {
	// Tag puts "[J,R]<stdout>:" before each line, as Open MPI's
	// --tag-output: J is 1 for the first job, 1+N for child job N.
	Tag         bool
	PrependRank bool   // "[R] " before each line, as Hydra's -l
	Timestamp   bool   // the time mpirun received each line
	FileDir     string // write DIR/J/rank.R/stdout|stderr instead of the terminal
	// JobOffset is added to every J: a client's copies (mpirun --dvm
	// --cc) tag and file copy N's output as job N (offset N-1).
	JobOffset int
}

// jobNumber is J of job k (0 the first, N child job N).
func (o Options) jobNumber(job int) int { return o.JobOffset + job + 1 }

func (o Options) prefixed() bool { return o.Tag || o.PrependRank || o.Timestamp }

// Unfinished lines are held back up to a bound, so that a rank writing
// megabytes without a newline is passed on in pieces instead of filling
// memory. With prefixes every piece gets one, so the bound is larger.
const (
	maxLine       = 64 << 10
	maxTaggedLine = 1 << 20
)

// Terminal writes chunks to mpirun's stdout and stderr. It writes whole
// lines, so that two ranks' lines are never mixed within a line; a rank's
// unfinished last line is written when its stream ends.
type Terminal struct {
	mu      sync.Mutex
	opt     Options
	out     map[Stream]io.Writer
	pending map[key][]byte
	ended   map[jobRank]Stream // the streams of each rank whose end came, as bits
	files   map[key]*os.File
	now     func() time.Time
	err     error
	scratch []byte // reused for each write
	writing atomic.Bool
	lastAt  atomic.Int64 // when the last chunk went through, in ns since started
	started time.Time
	// waiting is mpirun's stderr when it carries the waiting line:
	// stdout's lines go out with that line taken away too.
	waiting *WaitingLine
}

// key is one stream of a rank of a job: the first job (0, a DVM
// client's job at its client) or a child job (MPI_Comm_spawn).
type key struct {
	job, rank int
	stream    Stream
}

// NewTerminal writes to stdout and stderr.
func NewTerminal(stdout, stderr io.Writer, opt Options) *Terminal {
	waiting, _ := stderr.(*WaitingLine)
	return &Terminal{
		waiting: waiting,
		opt:     opt,
		out:     map[Stream]io.Writer{Stdout: stdout, Stderr: stderr},
		pending: map[key][]byte{},
		ended:   map[jobRank]Stream{},
		files:   map[key]*os.File{},
		now:     time.Now,
		started: time.Now(),
	}
}

// passed notes that a chunk went through (a stalled reader stops them).
func (t *Terminal) passed() { t.lastAt.Store(int64(time.Since(t.started))) }

// Idle is how long it has been since the last chunk went through (or since the
// terminal was made): output still flowing is a job still ending.
func (t *Terminal) Idle() time.Duration {
	return time.Since(t.started) - time.Duration(t.lastAt.Load())
}

// Send writes what is complete of a chunk. It blocks while the terminal
// blocks, which is how backpressure reaches the ranks. A terminal that
// fails (a closed pipe) swallows the rest, so that the job still ends.
func (t *Terminal) Send(c Chunk) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.passed()
	k := key{c.Job, c.Rank, c.Stream}
	held := t.pending[k]
	// Only the new bytes can hold a newline: what is held has none.
	cut := lastNewline(c.Data) + 1
	rest := len(c.Data) - cut // the unfinished line left after this chunk
	if cut == 0 {
		rest += len(held)
	}
	if c.EOF || rest > t.lineLimit() {
		cut = len(c.Data)
	}
	if cut > 0 || c.EOF {
		t.write(k, held, c.Data[:cut])
		held = held[:0]
	}
	t.keep(k, append(held, c.Data[cut:]...))
	if c.EOF {
		delete(t.pending, k)
		t.closeFile(k)
		t.ended[jobRank{c.Job, c.Rank}] |= c.Stream
	}
	return nil
}

// lastNewline is bytes.LastIndexByte(b, '\n'), fast on output without
// newlines too: the standard library scans backwards a byte at a time,
// which was a quarter of mpirun's CPU on binary output, where IndexByte
// is vectorised. Text has a newline near its end; the forward scan is for
// what has none there.
func lastNewline(b []byte) int {
	const tail = 256
	if len(b) <= tail {
		return bytes.LastIndexByte(b, '\n')
	}
	if i := bytes.LastIndexByte(b[len(b)-tail:], '\n'); i >= 0 {
		return len(b) - tail + i
	}
	last := -1
	for head := b[:len(b)-tail]; ; {
		i := bytes.IndexByte(head[last+1:], '\n')
		if i < 0 {
			return last
		}
		last += 1 + i
	}
}

// CutShort returns the first of ranks 0..n-1 whose stdout or stderr has
// not ended, and whether there is one. Each daemon sends a stream's end
// after its last byte, so a stream without an end lost its tail on the
// way: a link that ended as if cleanly (EOF) before its data did.
func (t *Terminal) CutShort(n int) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for r := range n {
		if t.ended[jobRank{0, r}] != Stdout|Stderr {
			return r, true
		}
	}
	return 0, false
}

func (t *Terminal) lineLimit() int {
	if t.opt.prefixed() {
		return maxTaggedLine
	}
	return maxLine
}

// keep holds an unfinished line; the buffer is reused between chunks.
func (t *Terminal) keep(k key, rest []byte) {
	if len(rest) == 0 && cap(rest) == 0 {
		delete(t.pending, k)
		return
	}
	t.pending[k] = rest
}

// write writes head and then tail, which together end on a line boundary
// (or end the stream).
func (t *Terminal) write(k key, head, tail []byte) {
	if len(head)+len(tail) == 0 || t.err != nil {
		return
	}
	text := tail
	if len(head) > 0 || t.opt.prefixed() {
		// Build the lines in one reused buffer: the output path makes no
		// garbage, so mpirun's memory does not depend on how often the
		// collector gets to run on a busy node.
		t.scratch = t.scratch[:0]
		if t.opt.prefixed() {
			t.scratch = t.appendPrefixed(t.scratch, k, head, tail)
		} else {
			t.scratch = append(append(t.scratch, head...), tail...)
		}
		text = t.scratch
	}
	w, err := t.writer(k)
	if err == nil {
		t.writing.Store(true)
		if t.waiting != nil && t.opt.FileDir == "" && k.stream == Stdout {
			_, err = t.waiting.WriteTo(w, text)
		} else {
			_, err = w.Write(text)
		}
		t.writing.Store(false)
	}
	t.err = err
}

// Stalled says a write is under way right now: asked after a long wait for
// the job to end, it means the reader of mpirun's output is not reading.
func (t *Terminal) Stalled() bool { return t.writing.Load() }

// prefixLines puts the prefix before every line of text.
// appendPrefixed appends head+tail to dst with the prefix before every
// line. head holds no newline (it is a held unfinished line).
func (t *Terminal) appendPrefixed(dst []byte, k key, head, tail []byte) []byte {
	prefix := t.prefix(k)
	start := true
	for _, part := range [][]byte{head, tail} {
		for len(part) > 0 {
			if start {
				dst = append(dst, prefix...)
			}
			end := bytes.IndexByte(part, '\n') + 1
			start = end > 0
			if end == 0 {
				end = len(part)
			}
			dst = append(dst, part[:end]...)
			part = part[end:]
		}
	}
	return dst
}

func (t *Terminal) prefix(k key) []byte {
	var p []byte
	if t.opt.Timestamp {
		p = t.now().AppendFormat(p, "2006-01-02T15:04:05.000000 ")
	}
	if t.opt.Tag {
		p = fmt.Appendf(p, "[%d,%d]<%s>:", t.opt.jobNumber(k.job), k.rank, k.stream)
	}
	if t.opt.PrependRank {
		p = fmt.Appendf(p, "[%d] ", k.rank)
	}
	return p
}

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return "stdin"
}

// writer is the terminal, or the rank's file with --output-filename.
func (t *Terminal) writer(k key) (io.Writer, error) {
	if t.opt.FileDir == "" {
		return t.out[k.stream], nil
	}
	if f, ok := t.files[k]; ok {
		return f, nil
	}
	dir := filepath.Join(t.opt.FileDir, strconv.Itoa(t.opt.jobNumber(k.job)), fmt.Sprintf("rank.%d", k.rank))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, k.stream.String()))
	if err != nil {
		return nil, err
	}
	t.files[k] = f
	return f, nil
}

func (t *Terminal) closeFile(k key) {
	if f, ok := t.files[k]; ok {
		if err := f.Close(); err != nil && t.err == nil {
			t.err = err
		}
		delete(t.files, k)
	}
}

// Flush writes every unfinished line and closes the files, for the end
// of the job. It returns the first write error, if any.
func (t *Terminal) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, buf := range t.pending {
		t.write(k, nil, buf)
		delete(t.pending, k)
	}
	for k := range t.files {
		t.closeFile(k)
	}
	return t.err
}
