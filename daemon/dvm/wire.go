// Package dvm is how a client reaches a DVM (mpirun --dvm-start): the
// Unix socket in a directory of the user's, its URI and the file that
// holds it, the frames a client and the DVM exchange, and the client's
// side of a job. daemon/protocol/DVM.md specifies them.
package dvm

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"prsh/daemon/protocol"
	"prsh/iof"
	"prsh/transport"
)

// Version numbers the client's wire; the DVM says its own in Hello, and
// a client of another version refuses to go on.
const Version = 3

// The frames' kinds (DVM.md, "The client's wire").
const (
	KindHello     byte = 1
	KindSubmit    byte = 2
	KindOutput    byte = 3
	KindOutputEnd byte = 4
	KindLine      byte = 5
	KindStatus    byte = 6
	KindSignal    byte = 7
	KindStop      byte = 8
	KindStopped   byte = 9
	// The job's stdin, a chunk at a time: the DVM asks for each
	// (InputWanted) once it passed the last one on to the ranks; the
	// client answers with Input, or InputEnd at its stdin's end.
	KindInputWanted byte = 10
	KindInput       byte = 11
	KindInputEnd    byte = 12
	// A child job's output (MPI_Comm_spawn; version 3): the child's
	// number at its client (1 for the client's job's first), then an
	// Output frame's payload.
	KindChildOutput    byte = 13
	KindChildOutputEnd byte = 14
)

// maxFrame bounds one frame: an output chunk is at most iof.ChunkSize,
// a Submit a job's Launch.
const maxFrame = 64 << 20

// Hello is the DVM's first frame to a client: who it is made of.
type Hello struct {
	Version int
	Hosts   []string // the node of each daemon id; [0] is the DVM's own
	// HostArgs and Hostfile are the -H values and --hostfile the DVM was
	// started with: a job that names no hosts is placed over them.
	HostArgs []string
	Hostfile string
	// Lost are the nodes the DVM lost (DVM.md, "Failure policy"): a job
	// places no rank there. Warnings says so, a line for each loss.
	Lost     []string `json:",omitempty"`
	Warnings []string `json:",omitempty"`
}

// Submit is a client's job.
type Submit struct {
	App       protocol.Launch
	TimeoutMS int64
}

// Status is the job's exit status, the DVM's last frame to its client.
type Status struct{ Status int }

// Signal is a signal the client got, for its job.
type Signal struct{ Sig int }

// Conn is one client's connection, at either end, carrying the
// daemons' own frames (transport's). Writes are safe for concurrent use;
// reads belong to one goroutine.
type Conn struct {
	c      net.Conn
	frames *transport.FrameReader
	mu     sync.Mutex
	buf    []byte
}

// NewConn wraps a connection.
func NewConn(c net.Conn) *Conn {
	return &Conn{c: c, frames: transport.NewFrameReader(bufio.NewReader(c), maxFrame)}
}

// SetWriteDeadline bounds the writes still to come.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.c.SetWriteDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Write sends one frame.
func (c *Conn) Write(kind byte, payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = transport.AppendFrame(c.buf[:0], kind, payload)
	_, err := c.c.Write(c.buf)
	return err
}

// WriteJSON sends v as a frame of kind.
func (c *Conn) WriteJSON(kind byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.Write(kind, b)
}

// WriteOutput sends a rank's output chunk, or its stream's end, as iof
// frames it.
func (c *Conn) WriteOutput(ch iof.Chunk) error {
	kind := KindOutput
	if ch.EOF {
		kind = KindOutputEnd
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch.Job != 0 {
		c.buf = appendChildChunk(c.buf[:0], kind+KindChildOutput-KindOutput, ch)
	} else {
		c.buf = iof.AppendChunk(c.buf[:0], kind, ch)
	}
	_, err := c.c.Write(c.buf)
	return err
}

// Read reads one frame; its payload is valid until the next Read.
func (c *Conn) Read() (kind byte, payload []byte, err error) {
	return c.frames.Next()
}

// ReadJSON reads one frame, which must be of kind, into v.
func (c *Conn) ReadJSON(kind byte, v any) error {
	got, payload, err := c.Read()
	if err != nil {
		return err
	}
	if got != kind {
		return fmt.Errorf("a frame of kind %d where %d was due", got, kind)
	}
	return json.Unmarshal(payload, v)
}

// OutputChunk decodes an Output or OutputEnd frame, or a child job's.
func OutputChunk(kind byte, payload []byte) (iof.Chunk, error) {
	if kind == KindChildOutput || kind == KindChildOutputEnd {
		if len(payload) < 4 {
			return iof.Chunk{}, fmt.Errorf("a child job's output frame of %d bytes", len(payload))
		}
		c, err := iof.DecodeChunk(payload[4:], kind == KindChildOutputEnd)
		c.Job = int(binary.BigEndian.Uint32(payload))
		return c, err
	}
	return iof.DecodeChunk(payload, kind == KindOutputEnd)
}

// appendChildChunk appends a child job's chunk as a frame of kind.
func appendChildChunk(dst []byte, kind byte, ch iof.Chunk) []byte {
	var head [9]byte
	binary.BigEndian.PutUint32(head[:], uint32(ch.Job))
	binary.BigEndian.PutUint32(head[4:], uint32(ch.Rank))
	head[8] = byte(ch.Stream)
	return transport.AppendFrame(dst, kind, head[:], ch.Data)
}

// noEOF: the DVM's connection ended before the job's status.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
