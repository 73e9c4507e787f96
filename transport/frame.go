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
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:4]))
	if n < 1 || n > limit {
		return 0, nil, fmt.Errorf("frame length %d outside 1..%d", n, limit)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, unexpected(err)
	}
	return body[0], body[1:], nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
