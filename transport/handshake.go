// Package transport carries bytes between daemons: one authenticated and
// sealed TCP connection per pair of daemons, multiplexed with yamux into
// streams that carry length-prefixed frames. PROTOCOL.md describes the
// wire. It knows frames and streams, not what is in them.
package transport

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"prsh/internal/tcp"
)

// SecretSize is the length of a job secret in bytes.
const SecretSize = 32

const nonceSize = 32

// magic opens the handshake; its last byte is the version of the wire, 2
// since links are sealed, so that a peer of another version is refused at
// the handshake rather than later with records it cannot open.
var magic = []byte("PRSH\x02")

// ErrBadProof is returned when the two sides do not share the job's
// secret: the peer's proof is wrong, or (for a dialer) the listener hung
// up on ours.
var ErrBadProof = errors.New("peer did not prove the job secret")

// NewSecret returns a fresh random job secret.
func NewSecret() ([]byte, error) {
	s := make([]byte, SecretSize)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("making the job secret: %w", err)
	}
	return s, nil
}

func proof(secret []byte, label string, ns, nc []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write(ns)
	m.Write(nc)
	return m.Sum(nil)
}

// listenerHandshake is the listener's side of the handshake; it returns
// the connection's keys.
func listenerHandshake(c net.Conn, secret []byte, timeout time.Duration) (keys, error) {
	ns, nc, err := listenerProof(c, secret, timeout)
	if err != nil {
		return keys{}, err
	}
	return linkKeys(secret, ns, nc, false)
}

// dialerHandshake is the dialer's side of the handshake; it returns the
// connection's keys.
func dialerHandshake(c net.Conn, secret []byte, timeout time.Duration) (keys, error) {
	ns, nc, err := dialerProof(c, secret, timeout)
	if err != nil {
		return keys{}, err
	}
	return linkKeys(secret, ns, nc, true)
}

// listenerProof is the listener's side of the mutual proof; it returns
// the nonces Ns and Nc.
func listenerProof(c net.Conn, secret []byte, timeout time.Duration) ([]byte, []byte, error) {
	defer tcp.Bound(c, timeout)()
	ns := make([]byte, nonceSize)
	if _, err := rand.Read(ns); err != nil {
		return nil, nil, err
	}
	if _, err := c.Write(append(append([]byte{}, magic...), ns...)); err != nil {
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	msg := make([]byte, len(magic)+nonceSize+sha256.Size)
	if _, err := io.ReadFull(c, msg); err != nil {
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	if !bytes.Equal(msg[:len(magic)], magic) {
		return nil, nil, fmt.Errorf("handshake: not a prsh peer")
	}
	nc := msg[len(magic) : len(magic)+nonceSize]
	if !hmac.Equal(msg[len(magic)+nonceSize:], proof(secret, "dialer", ns, nc)) {
		return nil, nil, ErrBadProof
	}
	if _, err := c.Write(proof(secret, "listener", ns, nc)); err != nil {
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	return ns, nc, nil
}

// dialerProof is the dialer's side of the mutual proof; it returns the
// nonces Ns and Nc.
func dialerProof(c net.Conn, secret []byte, timeout time.Duration) ([]byte, []byte, error) {
	defer tcp.Bound(c, timeout)()
	hello := make([]byte, len(magic)+nonceSize)
	if _, err := io.ReadFull(c, hello); err != nil {
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	if !bytes.Equal(hello[:len(magic)], magic) {
		return nil, nil, fmt.Errorf("handshake: not a prsh daemon")
	}
	ns := hello[len(magic):]
	nc := make([]byte, nonceSize)
	if _, err := rand.Read(nc); err != nil {
		return nil, nil, err
	}
	msg := append(append(append([]byte{}, magic...), nc...), proof(secret, "dialer", ns, nc)...)
	if _, err := c.Write(msg); err != nil {
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	answer := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, answer); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			// A listener hangs up right after step 2 only when our proof
			// is wrong: the two sides do not share the secret.
			return nil, nil, fmt.Errorf("handshake: peer refused our proof: %w", ErrBadProof)
		}
		return nil, nil, fmt.Errorf("handshake: peer refused our proof: %w", err)
	}
	if !hmac.Equal(answer, proof(secret, "listener", ns, nc)) {
		return nil, nil, ErrBadProof
	}
	return ns, nc, nil
}
