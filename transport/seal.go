package transport

import (
	"bufio"
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

// recordReader reads the plaintext of a stream of records.
type recordReader struct {
	r     io.Reader
	dir   *direction
	hdr   [recordHeader]byte
	buf   []byte // the last record, reused; at most one record long
	plain []byte // what of the last record Read has not yet returned
	err   error  // the error that ended the stream; every later Read returns it
}

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

// next reads the next record and opens it into p when it fits there,
// which spares a copy, or else into rr.plain.
func (rr *recordReader) next(p []byte) (int, error) {
	body, err := rr.readRecord()
	if err != nil {
		return 0, err
	}
	if len(p) >= len(body)-tagSize {
		plain, err := rr.dir.open(p[:0], rr.hdr[:], body)
		return len(plain), err
	}
	rr.plain, err = rr.dir.open(body[:0], rr.hdr[:], body)
	return 0, err
}

// readRecord reads the next record's header into rr.hdr and returns its
// body, unopened.
func (rr *recordReader) readRecord() ([]byte, error) {
	if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(rr.hdr[:]))
	if n <= tagSize || n > maxRecord+tagSize {
		return nil, fmt.Errorf("%w: length %d outside %d..%d", ErrBadRecord, n, tagSize+1, maxRecord+tagSize)
	}
	if cap(rr.buf) < n {
		rr.buf = make([]byte, n)
	}
	body := rr.buf[:n]
	if _, err := io.ReadFull(rr.r, body); err != nil {
		return nil, unexpected(err)
	}
	return body, nil
}

// recordWriter seals what is written to it into records.
type recordWriter struct {
	mu    sync.Mutex // yamux writes from one goroutine; this keeps any caller safe
	w     io.Writer
	dir   *direction
	buf   []byte // the record being written, reused
	held  []byte // a yamux data frame's header, waiting for its body
	joint []byte // held and the body's first part, reused
	err   error  // the error that ended the stream
}

// joinHeaders makes recordWriter seal a yamux data frame's header and its
// small body, which yamux writes one after the other, into one record
// with one write: half the records and syscalls of small frames (the
// output's lines). A variable for the benchmark that compares.
var joinHeaders = true

// Write seals p into records of at most maxRecord bytes, each written
// with one Write. A yamux data frame's header is held (reported written)
// until its body comes, which yamux writes next.
func (rw *recordWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return 0, rw.err
	}
	if joinHeaders && rw.held == nil && announcesBody(p) {
		rw.held = append(rw.joint[:0], p...)
		return len(p), nil
	}
	written := 0
	if rw.held != nil {
		first := min(len(p), maxRecord-len(rw.held))
		rw.joint = append(rw.held, p[:first]...)
		rw.held = nil
		if rw.writeRecord(rw.joint); rw.err == nil {
			written = first
		}
	}
	for written < len(p) && rw.err == nil {
		chunk := p[written:min(len(p), written+maxRecord)]
		if rw.writeRecord(chunk); rw.err == nil {
			written += len(chunk)
		}
	}
	return written, rw.err
}

// writeRecord seals plain into one record and writes it.
func (rw *recordWriter) writeRecord(plain []byte) {
	if rw.buf, rw.err = rw.dir.seal(rw.buf[:0], plain); rw.err == nil {
		_, rw.err = rw.w.Write(rw.buf)
	}
}

// announcesBody tells a yamux data frame's header that announces a small
// body (version 0, type data, a length up to joinMax): yamux writes that
// body next. A large body is not worth its copy behind the header.
func announcesBody(p []byte) bool {
	const yamuxHeader, typeData, joinMax = 12, 0, 4 << 10
	if len(p) != yamuxHeader || p[0] != 0 || p[1] != typeData {
		return false
	}
	n := binary.BigEndian.Uint32(p[8:])
	return n > 0 && n <= joinMax
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
		in:  recordReader{r: bufio.NewReader(raw), dir: in},
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
