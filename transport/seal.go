package transport

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// After the handshake every byte of a connection travels in records
// sealed with AES-256-GCM, one key per direction, derived from the job
// secret and both handshake nonces; a record's nonce is its number in its
// direction, so a record that is altered, forged, replayed, reordered or
// dropped fails to open. PROTOCOL.md ("Records") is the wire.

const (
	// maxRecord is the most plaintext one record carries.
	maxRecord    = 64 << 10
	tagSize      = 16
	recordHeader = 4
	// rekeyEvery is how many records one key seals before both sides of
	// a direction move to the next key, in step: at most 256 GiB per key
	// keeps AES-GCM at least as far from its usage bound as TLS 1.3 does.
	rekeyEvery = 1 << 22
)

// ErrBadRecord is why a connection ends when a record on it fails to
// open: it was changed on the way, or is not the next record its sender
// sealed for this connection.
var ErrBadRecord = errors.New("link record failed authentication (altered, forged, replayed, reordered or dropped on the way)")

// keys are one connection's keys, as this side uses them.
type keys struct{ send, receive []byte }

// linkKeys derives one side's keys of a connection from the job secret
// and the handshake's nonces: fresh for every connection, and different
// each way, so that no record can be replayed to another connection or
// reflected back to its sender.
func linkKeys(secret, ns, nc []byte, dialer bool) (keys, error) {
	salt := append(append([]byte{}, ns...), nc...)
	toListener, err := hkdf.Key(sha256.New, secret, salt, "prsh link dialer to listener", 32)
	if err != nil {
		return keys{}, err
	}
	toDialer, err := hkdf.Key(sha256.New, secret, salt, "prsh link listener to dialer", 32)
	if dialer {
		return keys{send: toListener, receive: toDialer}, err
	}
	return keys{send: toDialer, receive: toListener}, err
}

// direction is one direction of a connection: its current key and the
// number of the next record, which is that record's nonce.
type direction struct {
	key        []byte
	aead       cipher.AEAD
	seq        uint64
	rekeyEvery uint64             // the constant, but for tests
	nonce      [12]byte           // 4 zero bytes, then seq
	hdr        [recordHeader]byte // of the record being sealed: here, sealing allocates nothing
}

func newDirection(key []byte) (*direction, error) {
	d := &direction{rekeyEvery: rekeyEvery}
	return d, d.setKey(key)
}

func (d *direction) setKey(key []byte) error {
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	d.key = key
	d.aead, err = cipher.NewGCM(block)
	return err
}

// nextNonce is the current record's nonce.
func (d *direction) nextNonce() []byte {
	binary.BigEndian.PutUint64(d.nonce[4:], d.seq)
	return d.nonce[:]
}

// advance moves on to the next record, and to the next key after every
// rekeyEvery records. Keys never repeat, so neither does a key and nonce
// pair, even if seq were to wrap.
func (d *direction) advance() error {
	d.seq++
	if d.seq%d.rekeyEvery != 0 {
		return nil
	}
	next, err := hkdf.Expand(sha256.New, d.key, "prsh link next key", 32)
	if err != nil {
		return err
	}
	return d.setKey(next)
}

// seal appends the record that carries plain (1..maxRecord bytes) to dst.
// The header is authenticated too, so a changed length fails to open.
func (d *direction) seal(dst, plain []byte) ([]byte, error) {
	binary.BigEndian.PutUint32(d.hdr[:], uint32(len(plain)+tagSize))
	dst = append(dst, d.hdr[:]...)
	dst = d.aead.Seal(dst, d.nextNonce(), plain, d.hdr[:])
	return dst, d.advance()
}

// open appends the plaintext of a record's body to dst, which may be
// body[:0]; it fails unless the record is the next one its sender sealed.
func (d *direction) open(dst, hdr, body []byte) ([]byte, error) {
	plain, err := d.aead.Open(dst, d.nextNonce(), body, hdr)
	if err != nil {
		return nil, ErrBadRecord
	}
	return plain, d.advance()
}

// recordReader reads the plaintext of a stream of records. It reads as
// much as the connection has into one buffer, so that one read syscall
// may bring several records, and opens each record straight into the
// caller's buffer when it fits there, or else in place.
type recordReader struct {
	r          io.Reader
	dir        *direction
	buf        []byte // records read but not yet opened are buf[start:end]
	start, end int
	plain      []byte // what of the last record Read has not yet returned, in buf
	err        error  // the error that ended the stream; every later Read returns it
}

const (
	// maxWire is the most bytes one record takes on the wire.
	maxWire = recordHeader + maxRecord + tagSize
	// readBuffer is the reader's buffer once bulk data flows: two large
	// frames (a header's record and a full record each), so that the
	// record being read seldom needs moving to make room.
	readBuffer = 2 * (recordHeader + yamuxHeader + tagSize + maxWire)
	// firstReadBuffer is the reader's buffer until a record does not fit
	// it: links that carry only small messages keep a small one.
	firstReadBuffer = 4 << 10
)

// Read returns plaintext from the records in order. io.EOF means the
// stream ended between records: the link was closed or cut there, which
// loses nothing that was sealed into a record already read.
func (rr *recordReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(rr.plain) == 0 {
		if rr.err != nil {
			return 0, rr.err
		}
		var n int
		if n, rr.err = rr.next(p); n > 0 {
			return n, nil
		}
	}
	n := copy(p, rr.plain)
	rr.plain = rr.plain[n:]
	return n, nil
}

// next opens the next record into p when it fits there, which spares a
// copy, or else in place into rr.plain.
func (rr *recordReader) next(p []byte) (int, error) {
	hdr, body, err := rr.record()
	if err != nil {
		return 0, err
	}
	if len(p) >= len(body)-tagSize {
		plain, err := rr.dir.open(p[:0], hdr, body)
		return len(plain), err
	}
	rr.plain, err = rr.dir.open(body[:0], hdr, body)
	return 0, err
}

// record returns the next whole record, unopened, from the buffer,
// reading more from the connection until it is all there.
func (rr *recordReader) record() (hdr, body []byte, err error) {
	need := recordHeader
	for {
		if have := rr.end - rr.start; have >= recordHeader {
			n := int(binary.BigEndian.Uint32(rr.buf[rr.start:]))
			if n <= tagSize || n > maxRecord+tagSize {
				return nil, nil, fmt.Errorf("%w: length %d outside %d..%d", ErrBadRecord, n, tagSize+1, maxRecord+tagSize)
			}
			if need = recordHeader + n; have >= need {
				rec := rr.buf[rr.start : rr.start+need]
				rr.start += need
				return rec[:recordHeader], rec[recordHeader:], nil
			}
		}
		if err := rr.fill(need); err != nil {
			return nil, nil, err
		}
	}
}

// fill makes room for a record of need bytes at rr.start, then reads what
// the connection has into the rest of the buffer.
func (rr *recordReader) fill(need int) error {
	if rr.start == rr.end {
		rr.start, rr.end = 0, 0
	}
	if rr.start+need > len(rr.buf) {
		buf := rr.buf
		switch {
		case need > firstReadBuffer && len(buf) < readBuffer:
			buf = make([]byte, readBuffer)
		case buf == nil:
			buf = make([]byte, firstReadBuffer)
		}
		rr.end = copy(buf, rr.buf[rr.start:rr.end])
		rr.buf, rr.start = buf, 0
	}
	n, err := rr.r.Read(rr.buf[rr.end:])
	rr.end += n
	switch {
	case n > 0:
		return nil
	case err == io.EOF && rr.end > rr.start:
		return io.ErrUnexpectedEOF // a record cut short
	case err == nil:
		return io.ErrNoProgress
	}
	return err
}

// writeBatch bounds what one write syscall carries, and so the size of
// the pooled buffers records are sealed into.
const writeBatch = 4 * maxWire

// sealBuffers are the buffers records are sealed into before they are
// written: shared by all connections, so that an idle one holds none.
var sealBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, writeBatch)
	return &b
}}

// recordWriter seals what is written to it into records.
type recordWriter struct {
	mu    sync.Mutex // yamux writes from one goroutine; this keeps any caller safe
	w     io.Writer
	dir   *direction
	held  []byte // a yamux data frame's header, waiting for its body
	hold  [yamuxHeader]byte
	joint []byte // a header and its small body, sealed together; reused
	err   error  // the error that ended the stream
}

// joinHeaders makes recordWriter seal a yamux data frame's header and its
// small body, which yamux writes one after the other, into one record:
// half the records of small frames (the output's lines). A variable for
// the benchmark that compares.
var joinHeaders = true

// Write seals p into records of at most maxRecord bytes and writes them
// with one Write per writeBatch bytes. A yamux data frame's header is
// held (reported written) until its body comes, which yamux writes next,
// so that header and body leave in one write: in one record when the
// body is small, else the header in a record of its own, which lets the
// reader open the body's records straight into yamux's buffer.
func (rw *recordWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return 0, rw.err
	}
	if rw.held == nil && announcesBody(p) {
		rw.held = append(rw.hold[:0], p...)
		return len(p), nil
	}
	bufp := sealBuffers.Get().(*[]byte)
	defer sealBuffers.Put(bufp)
	out, written, sent := (*bufp)[:0], 0, 0
	if held := rw.held; held != nil {
		rw.held = nil
		var first []byte
		if joinHeaders && len(p) <= joinMax {
			first, written = p, len(p)
		}
		out = rw.sealJoined(out, held, first)
	}
	for written < len(p) && rw.err == nil {
		if len(out)+maxWire > cap(out) {
			out, sent = rw.send(out, written, sent)
		}
		chunk := p[written:min(len(p), written+maxRecord)]
		if out, rw.err = rw.dir.seal(out, chunk); rw.err == nil {
			written += len(chunk)
		}
	}
	_, sent = rw.send(out, written, sent)
	*bufp = out[:0]
	return sent, rw.err
}

// sealJoined appends one record holding a frame's header and its body.
func (rw *recordWriter) sealJoined(out, header, body []byte) []byte {
	rw.joint = append(append(rw.joint[:0], header...), body...)
	out, rw.err = rw.dir.seal(out, rw.joint)
	return out
}

// send writes the records in out, which carry p up to written, and
// returns out emptied and how much of p has gone.
func (rw *recordWriter) send(out []byte, written, sent int) ([]byte, int) {
	if rw.err == nil && len(out) > 0 {
		if _, rw.err = rw.w.Write(out); rw.err == nil {
			sent = written
		}
	}
	return out[:0], sent
}

const (
	yamuxHeader = 12
	// joinMax is the largest body sealed with its header: a larger one
	// is not worth its copy behind the header.
	joinMax = 4 << 10
)

// announcesBody tells a yamux data frame's header that announces a body
// (version 0, type data, a length above 0): yamux writes that body next.
func announcesBody(p []byte) bool {
	const typeData = 0
	if len(p) != yamuxHeader || p[0] != 0 || p[1] != typeData {
		return false
	}
	return binary.BigEndian.Uint32(p[8:]) > 0
}

// sealedConn is a TCP connection after the handshake: what is written to
// it goes out in sealed records, what is read from it comes from records
// that opened.
type sealedConn struct {
	net.Conn
	in  recordReader
	out recordWriter

	mu  sync.Mutex
	bad error // the record that failed to open, if one did
}

func seal(raw net.Conn, k keys) (*sealedConn, error) {
	in, err := newDirection(k.receive)
	if err != nil {
		return nil, err
	}
	out, err := newDirection(k.send)
	if err != nil {
		return nil, err
	}
	return &sealedConn{Conn: raw,
		in:  recordReader{r: raw, dir: in},
		out: recordWriter{w: raw, dir: out}}, nil
}

func (c *sealedConn) Read(p []byte) (int, error) {
	n, err := c.in.Read(p)
	if errors.Is(err, ErrBadRecord) {
		c.mu.Lock()
		if c.bad == nil {
			c.bad = err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *sealedConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// failure is the error of the record that failed to open, if one did.
func (c *sealedConn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bad
}
