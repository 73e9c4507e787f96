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
)

// ChunkSize is how much a reader takes from a rank's pipe at once.
const ChunkSize = 32 << 10

// Chunk is a piece of one rank's output, or its end when EOF is set.
type Chunk struct {
	Rank   int
	Stream Stream
	Data   []byte
	EOF    bool
}

// Sender writes chunks to a stream; it is safe for concurrent use, and
// each chunk is written whole.
type Sender struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSender wraps the output stream to the parent.
func NewSender(w io.Writer) *Sender { return &Sender{w: w} }

// Send writes one chunk.
func (s *Sender) Send(c Chunk) error {
	payload := make([]byte, 5+len(c.Data))
	binary.BigEndian.PutUint32(payload, uint32(c.Rank))
	payload[4] = byte(c.Stream)
	copy(payload[5:], c.Data)
	kind := kindData
	if c.EOF {
		kind = kindEOF
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return transport.WriteFrame(s.w, kind, payload)
}

// Receive reads the next chunk; io.EOF when the stream ended cleanly.
func Receive(r io.Reader) (Chunk, error) {
	kind, payload, err := transport.ReadFrame(r, ChunkSize+64)
	if err != nil {
		return Chunk{}, err
	}
	if len(payload) < 5 || (kind != kindData && kind != kindEOF) {
		return Chunk{}, fmt.Errorf("iof: malformed chunk (kind %d, %d bytes)", kind, len(payload))
	}
	c := Chunk{
		Rank:   int(binary.BigEndian.Uint32(payload)),
		Stream: Stream(payload[4]),
		Data:   payload[5:],
		EOF:    kind == kindEOF,
	}
	if c.Stream != Stdout && c.Stream != Stderr && c.Stream != StdinStream {
		return Chunk{}, fmt.Errorf("iof: unknown stream %d", c.Stream)
	}
	return c, nil
}

// Sink is where chunks end up: the upward stream of an orted, or mpirun's
// terminal.
type Sink interface {
	Send(Chunk) error
}

// Pump reads a rank's pipe until EOF and sends it to sink in chunks, then
// sends the EOF chunk. A read error on the pipe counts as EOF. When the
// sink fails, Pump still reads the pipe to its end, so that the rank is
// never left blocked on a full pipe, and returns the sink's error.
func Pump(sink Sink, rank int, stream Stream, pipe io.Reader) error {
	buf := make([]byte, ChunkSize)
	for {
		n, err := pipe.Read(buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			if serr := sink.Send(Chunk{Rank: rank, Stream: stream, Data: data}); serr != nil {
				io.Copy(io.Discard, pipe)
				return serr
			}
		}
		if err != nil {
			return sink.Send(Chunk{Rank: rank, Stream: stream, EOF: true})
		}
	}
}

// Relay copies chunks from a child's stream to sink until the child closes
// it. io.EOF from the child is a clean end and returns nil.
func Relay(sink Sink, child io.Reader) error {
	for {
		c, err := Receive(child)
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
