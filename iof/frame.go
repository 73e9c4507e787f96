// Package iof forwards the ranks' standard output and error up the spawn
// tree to mpirun's terminal. Each daemon sends one output stream to its
// parent; a chunk carries the rank, the stream it came from and the bytes.
// Writes block when the stream's window is full, so a slow terminal slows
// the ranks down instead of filling memory anywhere on the way.
package iof

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"prsh/transport"
)

// Stream names a rank's output stream.
type Stream byte

const (
	Stdout Stream = 1
	Stderr Stream = 2
)

const (
	kindData byte = 1 // rank, stream, bytes
	kindEOF  byte = 2 // rank, stream: no more bytes will come
	// A DVM job's chunks (Chunk.Job > 0): the job's number, 4 bytes, then
	// as kindData and kindEOF. A plain mpirun's stream never holds one.
	kindJobData byte = 3
	kindJobEOF  byte = 4
)

// ChunkSize is how much a reader takes from a rank's pipe at once.
const ChunkSize = 64 << 10

// firstBuffer is a pump's buffer until a read fills it: most ranks write
// little, and 64 KiB for each pipe of every rank from its start was 90 %
// of an orted's heap with 256 ranks (37 MB), near its soft memory limit.
const firstBuffer = 4 << 10

// Chunk is a piece of one rank's output, or its end when EOF is set.
type Chunk struct {
	Job    int // the rank's DVM job; 0 in a plain mpirun
	Rank   int
	Stream Stream
	Data   []byte
	EOF    bool
}

// Sender writes chunks to a stream; it is safe for concurrent use, and
// each chunk is written whole, in one write, from a reused buffer.
type Sender struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewSender wraps the output stream to the parent.
func NewSender(w io.Writer) *Sender { return &Sender{w: w} }

// Send writes one chunk. c.Data may be reused once Send returns.
func (s *Sender) Send(c Chunk) error {
	kind := kindData
	if c.EOF {
		kind = kindEOF
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Job != 0 {
		s.buf = appendJobChunk(s.buf[:0], kind+kindJobData-kindData, c)
	} else {
		s.buf = AppendChunk(s.buf[:0], kind, c)
	}
	_, err := s.w.Write(s.buf)
	return err
}

// appendJobChunk appends c as a frame of kind with its job first.
func appendJobChunk(dst []byte, kind byte, c Chunk) []byte {
	var head [9]byte
	binary.BigEndian.PutUint32(head[:], uint32(c.Job))
	binary.BigEndian.PutUint32(head[4:], uint32(c.Rank))
	head[8] = byte(c.Stream)
	return transport.AppendFrame(dst, kind, head[:], c.Data)
}

// AppendChunk appends c as a frame of kind (a stream of chunks, or the
// DVM's client wire): its payload is the rank, the stream, the bytes.
func AppendChunk(dst []byte, kind byte, c Chunk) []byte {
	var head [5]byte
	binary.BigEndian.PutUint32(head[:], uint32(c.Rank))
	head[4] = byte(c.Stream)
	return transport.AppendFrame(dst, kind, head[:], c.Data)
}

// DecodeChunk reads a chunk's frame payload (AppendChunk's); eof says
// the frame was a stream's end. Data points into payload.
func DecodeChunk(payload []byte, eof bool) (Chunk, error) {
	if len(payload) < 5 {
		return Chunk{}, fmt.Errorf("iof: malformed chunk (%d bytes)", len(payload))
	}
	c := Chunk{
		Rank:   int(binary.BigEndian.Uint32(payload)),
		Stream: Stream(payload[4]),
		Data:   payload[5:],
		EOF:    eof,
	}
	if c.Stream != Stdout && c.Stream != Stderr && c.Stream != StdinStream {
		return Chunk{}, fmt.Errorf("iof: unknown stream %d", c.Stream)
	}
	return c, nil
}

// Receiver reads chunks from a stream into a reused buffer: a chunk's
// Data is valid until the next call.
type Receiver struct{ frames *transport.FrameReader }

// NewReceiver reads chunks from r.
func NewReceiver(r io.Reader) *Receiver {
	return &Receiver{frames: transport.NewFrameReader(r, ChunkSize+64)}
}

// Receive reads the next chunk; io.EOF when the stream ended cleanly.
func Receive(r io.Reader) (Chunk, error) { return NewReceiver(r).Next() }

// Next reads the next chunk; io.EOF when the stream ended cleanly.
func (r *Receiver) Next() (Chunk, error) {
	kind, payload, err := r.frames.Next()
	if err != nil {
		return Chunk{}, err
	}
	switch kind {
	case kindData, kindEOF:
		return DecodeChunk(payload, kind == kindEOF)
	case kindJobData, kindJobEOF:
		if len(payload) < 4 {
			break
		}
		c, err := DecodeChunk(payload[4:], kind == kindJobEOF)
		c.Job = int(binary.BigEndian.Uint32(payload))
		return c, err
	}
	return Chunk{}, fmt.Errorf("iof: malformed chunk (kind %d, %d bytes)", kind, len(payload))
}

// Sink is where chunks end up: the upward stream of an orted, mpirun's
// terminal, or the stdin tree. Send must not keep c.Data after it
// returns: callers reuse the buffer.
type Sink interface {
	Send(c Chunk) error
}

// Pump reads a rank's pipe until EOF and sends it to sink in chunks, then
// sends the EOF chunk. A read error on the pipe counts as EOF. When the
// sink fails, Pump still reads the pipe to its end, so that the rank is
// never left blocked on a full pipe, and returns the sink's error.
// Its buffer starts small and grows to ChunkSize once a read fills it.
func Pump(sink Sink, rank int, stream Stream, pipe io.Reader) error {
	buf := make([]byte, firstBuffer)
	for {
		n, err := pipe.Read(buf)
		if n > 0 {
			if serr := sink.Send(Chunk{Rank: rank, Stream: stream, Data: buf[:n]}); serr != nil {
				io.Copy(io.Discard, pipe)
				return serr
			}
		}
		if n == len(buf) && n < ChunkSize {
			buf = make([]byte, ChunkSize)
		}
		if err != nil {
			return sink.Send(Chunk{Rank: rank, Stream: stream, EOF: true})
		}
	}
}

// Relay copies chunks from a child's stream to sink until the child closes
// it. io.EOF from the child is a clean end and returns nil.
func Relay(sink Sink, child io.Reader) error {
	in := NewReceiver(child)
	for {
		c, err := in.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := sink.Send(c); err != nil {
			return err
		}
	}
}
