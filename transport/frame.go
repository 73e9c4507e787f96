package transport

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MaxFrame is the default limit on a frame's length.
const MaxFrame = 32 << 20

// WriteFrame writes one frame of the given kind. It issues a single Write,
// so frames from one writer are never torn; callers that share a stream
// between goroutines must still serialise their calls.
func WriteFrame(w io.Writer, kind byte, payload []byte) error {
	if len(payload)+1 > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", len(payload)+1, MaxFrame)
	}
	buf := make([]byte, 5+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)+1))
	buf[4] = kind
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame, refusing any longer than limit bytes. io.EOF
// means the stream ended cleanly between frames.
func ReadFrame(r io.Reader, limit int) (kind byte, payload []byte, err error) {
	fr := FrameReader{r: r, limit: limit}
	return fr.Next()
}

// FrameReader reads frames into one reused buffer, for streams that carry
// bulk data: a payload is valid until the next call.
type FrameReader struct {
	r     io.Reader
	limit int
	buf   []byte
}

// NewFrameReader reads frames of at most limit bytes from r.
func NewFrameReader(r io.Reader, limit int) *FrameReader {
	return &FrameReader{r: r, limit: limit}
}

// Next reads the next frame; io.EOF means the stream ended cleanly.
func (f *FrameReader) Next() (kind byte, payload []byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n < 1 || n > f.limit {
		return 0, nil, fmt.Errorf("frame length %d outside 1..%d", n, f.limit)
	}
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	body := f.buf[:n]
	if _, err := io.ReadFull(f.r, body); err != nil {
		return 0, nil, unexpected(err)
	}
	return body[0], body[1:], nil
}

// AppendFrame appends a frame to dst without writing it, so that a sender
// can build a frame in a reused buffer.
func AppendFrame(dst []byte, kind byte, parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, kind)
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
