package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// Limits of the PMI-2 wire as prsh's server (package pmi) applies them.
const (
	MaxKey     = 64       // longest key, PMI-2's PMI2_MAX_KEYLEN
	MaxValue   = 1024     // longest KVS value a PMI-2 server hands back in kvs-get
	MaxRequest = 64 << 10 // longest request frame body the server reads
	maxReply   = 999999   // longest frame body the 6-digit length field can announce
	header     = 6        // the length field
)

var (
	// ErrNotLaunched: PMI_FD is not set, so the program was not started
	// by mpirun (or any PMI launcher).
	ErrNotLaunched = errors.New("pmi: not started by mpirun: PMI_FD is not set")

	// ErrClosed: the connection is gone — the launcher closed it, or the
	// program called Finalize or Abort. Every later call fails with it.
	ErrClosed = errors.New("pmi: connection closed")

	// ErrNotFound: Get of a key that no rank put before the last fence.
	ErrNotFound = errors.New("pmi: key not found")

	// ErrOutstanding: a collective was started while a non-blocking one
	// (Ifence, Iallgather) has not been waited for; see Client.
	ErrOutstanding = errors.New("pmi: a non-blocking request is outstanding: Wait for it first")

	// ErrProtocol: the server sent something this client cannot read.
	// The connection is unusable afterwards.
	ErrProtocol = errors.New("pmi: protocol error")

	// ErrTooLong: a key, value or request exceeds the limits above. Nothing
	// was sent; the connection is still usable.
	ErrTooLong = errors.New("pmi: too long")
)

// ServerError is a request the server answered with rc != 0, for example
// a command it does not know or a collective the daemon could not finish.
// The connection is still usable.
type ServerError struct {
	Cmd string // the request, e.g. "allgather"
	Msg string // the server's errmsg
}

func (e *ServerError) Error() string { return "pmi: " + e.Cmd + ": server error: " + e.Msg }

// item is one key=value of a frame, in wire order.
type item struct{ key, value string }

// reply is a decoded reply frame.
type reply struct {
	cmd   string
	items []item // after cmd=
}

// get returns the first value of key, as the C clients do.
func (r reply) get(key string) (string, bool) {
	for _, it := range r.items {
		if it.key == key {
			return it.value, true
		}
	}
	return "", false
}

// frame encodes a request: an exact, left-aligned length and the items,
// ';' in values doubled.
func frame(cmd string, kv ...string) ([]byte, error) {
	var sb strings.Builder
	sb.WriteString("cmd=" + cmd + ";")
	for i := 0; i+1 < len(kv); i += 2 {
		sb.WriteString(kv[i] + "=" + strings.ReplaceAll(kv[i+1], ";", ";;") + ";")
	}
	if sb.Len() > MaxRequest {
		return nil, fmt.Errorf("%w: %s request of %d bytes (at most %d)", ErrTooLong, cmd, sb.Len(), MaxRequest)
	}
	return []byte(fmt.Sprintf("%-6d%s", sb.Len(), sb.String())), nil
}

// readFrame reads and decodes one reply frame.
func readFrame(br *bufio.Reader) (reply, error) {
	var hdr [header]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return reply{}, ioError(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n <= 0 || n > maxReply {
		return reply{}, fmt.Errorf("%w: bad frame length %q", ErrProtocol, hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return reply{}, ioError(err)
	}
	return parseFrame(string(body))
}

// parseFrame splits key=value; items strictly: our server sends exact
// frames, so anything odd means the stream is out of step.
func parseFrame(body string) (reply, error) {
	var items []item
	for s := body; s != ""; {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || strings.IndexByte(s[:eq], ';') >= 0 {
			return reply{}, fmt.Errorf("%w: malformed reply %q", ErrProtocol, clip(body))
		}
		key := s[:eq]
		var value string
		value, s = unescape(s[eq+1:])
		items = append(items, item{key, value})
	}
	if len(items) == 0 || items[0].key != "cmd" {
		return reply{}, fmt.Errorf("%w: reply without cmd: %q", ErrProtocol, clip(body))
	}
	return reply{cmd: items[0].value, items: items[1:]}, nil
}

// unescape reads a value up to its terminating ';' (one not followed by
// another, ";;" being an escaped ';') and returns what follows.
func unescape(s string) (value, rest string) {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != ';':
			sb.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == ';':
			sb.WriteByte(';')
			i++
		default:
			return sb.String(), s[i+1:]
		}
	}
	return sb.String(), ""
}

// unpackValues decodes an allgather reply: count, comma-separated byte
// lengths and the values' concatenation (EXTENSIONS.md).
func unpackValues(r reply) ([]string, error) {
	count, _ := r.get("count")
	lengths, _ := r.get("lengths")
	all, _ := r.get("values")
	n, err := strconv.Atoi(count)
	ls := strings.Split(lengths, ",")
	if err != nil || n != len(ls) {
		return nil, fmt.Errorf("%w: allgather reply with count %q and %d lengths", ErrProtocol, clip(count), len(ls))
	}
	values := make([]string, n)
	for i, l := range ls {
		size, err := strconv.Atoi(l)
		if err != nil || size < 0 || size > len(all) {
			return nil, fmt.Errorf("%w: allgather reply with bad length %q for rank %d", ErrProtocol, clip(l), i)
		}
		values[i], all = all[:size], all[size:]
	}
	if all != "" {
		return nil, fmt.Errorf("%w: allgather reply with %d bytes beyond its lengths", ErrProtocol, len(all))
	}
	return values, nil
}

// ioError names the end of the connection ErrClosed, whichever way it
// shows: EOF, a reset, a broken pipe, a closed socket.
func ioError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return fmt.Errorf("pmi: %w", err)
}

// clip shortens text quoted in errors.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
