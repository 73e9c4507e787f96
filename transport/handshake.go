// Package transport carries bytes between daemons: one authenticated TCP
// connection per pair of daemons, multiplexed with yamux into streams that
// carry length-prefixed frames. PROTOCOL.md describes the wire. It knows
// frames and streams, not what is in them.
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
)

// SecretSize is the length of a job secret in bytes.
const SecretSize = 32

const nonceSize = 32

var magic = []byte("PRSH\x01")

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

// listenerHandshake is the listener's side of the handshake.
func listenerHandshake(c net.Conn, secret []byte, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	ns := make([]byte, nonceSize)
	if _, err := rand.Read(ns); err != nil {
		return err
	}
	if _, err := c.Write(append(append([]byte{}, magic...), ns...)); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	msg := make([]byte, len(magic)+nonceSize+sha256.Size)
	if _, err := io.ReadFull(c, msg); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	if !bytes.Equal(msg[:len(magic)], magic) {
		return fmt.Errorf("handshake: not a prsh peer")
	}
	nc := msg[len(magic) : len(magic)+nonceSize]
	if !hmac.Equal(msg[len(magic)+nonceSize:], proof(secret, "dialer", ns, nc)) {
		return ErrBadProof
	}
	if _, err := c.Write(proof(secret, "listener", ns, nc)); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	return nil
}

// dialerHandshake is the dialer's side of the handshake.
func dialerHandshake(c net.Conn, secret []byte, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	hello := make([]byte, len(magic)+nonceSize)
	if _, err := io.ReadFull(c, hello); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	if !bytes.Equal(hello[:len(magic)], magic) {
		return fmt.Errorf("handshake: not a prsh daemon")
	}
	ns := hello[len(magic):]
	nc := make([]byte, nonceSize)
	if _, err := rand.Read(nc); err != nil {
		return err
	}
	msg := append(append(append([]byte{}, magic...), nc...), proof(secret, "dialer", ns, nc)...)
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	answer := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, answer); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			// A listener hangs up right after step 2 only when our proof
			// is wrong: the two sides do not share the secret.
			return fmt.Errorf("handshake: peer refused our proof: %w", ErrBadProof)
		}
		return fmt.Errorf("handshake: peer refused our proof: %w", err)
	}
	if !hmac.Equal(answer, proof(secret, "listener", ns, nc)) {
		return ErrBadProof
	}
	return nil
}
