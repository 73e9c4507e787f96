package pmi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits on what a client may send. MPICH writes at most 1024 bytes per
// request; other PMI-1 clients honour get_maxes literally
// (256 + 64 + 1024 bytes plus the syntax), so lines get some room.
const (
	maxLine       = 4096     // PMI-1 request line, newline included
	maxFrame      = 64 << 10 // PMI-2 frame body, junk included
	maxSpawnLines = 4096     // lines in one mcmd=spawn block
	frameHeader   = 6        // PMI-2 length field
	junkLen       = 6        // MPICH 4.0.2's surplus frame bytes (WIRE.md §6.2)
	maxBody2      = 999999   // longest reply body the 6-digit length field can announce
)

// ErrProtocol marks input that cannot be read any further: an over-long
// line, a bad frame length, a stream cut inside a message.
var ErrProtocol = errors.New("protocol error")

type protocol int

const (
	pmi1 protocol = 1 // "simple" lines: cmd=name key=value ...\n
	pmi2 protocol = 2 // frames: 6-byte length, then cmd=name;key=value;...
)

// item is one key=value of a request, in wire order.
type item struct{ key, value string }

// request is one client message. A message that was read whole but does
// not make sense has bad set to the reason; it gets an error reply.
type request struct {
	proto protocol
	cmd   string
	items []item // after cmd=, in wire order (PMI-2 spawn repeats keys)
	bad   string
}

// get returns the first value of key, as the clients themselves do.
func (r request) get(key string) (string, bool) {
	for _, it := range r.items {
		if it.key == key {
			return it.value, true
		}
	}
	return "", false
}

// reader splits a connection's byte stream into requests. Each message is
// classified on its own, as Hydra does: PMI-1 lines start with "cmd=" or
// "mcmd=", PMI-2 frames with a digit or a space. A PMI-2 client's first
// message is a PMI-1 init line, so one connection carries both.
type reader struct {
	br         *bufio.Reader
	junk       int  // bytes of garbage to drop from the end of every frame
	exact      bool // the client's first frame ended exactly: its frames carry no garbage
	calibrated bool // junk and exact have been decided, on the first frame
}

func newReader(r io.Reader) *reader {
	return &reader{br: bufio.NewReaderSize(r, maxLine)}
}

// next reads one request. io.EOF means the client closed the connection
// between messages; any other error means the stream is unusable.
func (rd *reader) next() (request, error) {
	first, err := rd.br.Peek(1)
	if err != nil {
		return request{}, err
	}
	if first[0] == 'c' || first[0] == 'm' {
		return rd.pmi1Message()
	}
	return rd.frame()
}

// pmi1Message reads a line, or a whole mcmd= block up to its endcmd line.
func (rd *reader) pmi1Message() (request, error) {
	line, err := rd.line()
	if err != nil {
		return request{}, err
	}
	if !strings.HasPrefix(line, "mcmd=") {
		return parseLine(line), nil
	}
	lines := []string{line}
	for {
		line, err := rd.line()
		if err != nil {
			return request{}, err
		}
		if line == "endcmd" {
			return parseBlock(lines), nil
		}
		if lines = append(lines, line); len(lines) > maxSpawnLines {
			return request{}, fmt.Errorf("%w: mcmd block of more than %d lines", ErrProtocol, maxSpawnLines)
		}
	}
}

// line reads one newline-terminated line and returns it without the newline.
func (rd *reader) line() (string, error) {
	b, err := rd.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return "", fmt.Errorf("%w: PMI-1 line longer than %d bytes", ErrProtocol, maxLine)
	case errors.Is(err, io.EOF):
		return "", fmt.Errorf("%w: connection closed inside a PMI-1 message", ErrProtocol)
	case err != nil:
		return "", err
	}
	return string(b[:len(b)-1]), nil
}

// frame reads one PMI-2 frame and decodes it.
func (rd *reader) frame() (request, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(rd.br, hdr[:]); err != nil {
		return request{}, cutShort(err, "frame header")
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n <= 0 || n > maxFrame {
		return request{}, fmt.Errorf("%w: bad PMI-2 frame length %q", ErrProtocol, hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rd.br, body); err != nil {
		return request{}, cutShort(err, "frame")
	}
	if !rd.calibrated {
		rd.junk, rd.exact, rd.calibrated = calibrate(body), endsInThreaded(body), true
	}
	if len(body) < rd.junk {
		return request{proto: pmi2, bad: "frame shorter than the client's surplus bytes"}, nil
	}
	body = body[:len(body)-rd.junk]
	if !rd.exact {
		// Garbage the calibration missed starts with a NUL more often than
		// not. A client with exact lengths needs no such defence, so its
		// values may hold any byte (an allgather value, say).
		if i := bytes.IndexByte(body, 0); i >= 0 {
			body = body[:i]
		}
	}
	return parseFrame(body), nil
}

func cutShort(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: connection closed inside a PMI-2 %s", ErrProtocol, what)
	}
	return err
}

// calibrate decides from a connection's first frame, always fullinit,
// whether this client declares 6 bytes more than it means (MPICH 4.0.2
// does, and fills them with whatever its stack held, even ";"; Slurm's
// libpmi2 does not). fullinit's last item is always threaded=TRUE or
// threaded=FALSE: if it ends 6 bytes before the frame does, every frame
// of the connection carries the junk.
func calibrate(first []byte) int {
	if endsInThreaded(first) {
		return 0
	}
	if len(first) >= junkLen && endsInThreaded(first[:len(first)-junkLen]) {
		return junkLen
	}
	return 0
}

// endsInThreaded says whether a fullinit body ends with its last item.
func endsInThreaded(b []byte) bool {
	return bytes.HasSuffix(b, []byte("threaded=TRUE;")) || bytes.HasSuffix(b, []byte("threaded=FALSE;"))
}

// parseLine decodes a PMI-1 line: space-separated key=value tokens, each
// split at its first '=', nothing escaped. A value= token takes the rest
// of the line, spaces included: Open MPI's PMI-1 values end in " -" (its
// base64 is padded with spaces, '-' marks the end), and a server that
// stopped at the space would lose the terminator.
func parseLine(line string) request {
	req := request{proto: pmi1}
	for rest := line; rest != ""; {
		var tok string
		if strings.HasPrefix(rest, "value=") {
			tok, rest = rest, ""
		} else {
			tok, rest, _ = strings.Cut(rest, " ")
		}
		if tok == "" {
			continue // tolerate doubled spaces
		}
		key, value, ok := strings.Cut(tok, "=")
		if !ok || key == "" {
			req.bad = fmt.Sprintf("token %q is not key=value", clip(tok))
			return req
		}
		req.items = append(req.items, item{key, value})
	}
	return withCmd(req, "cmd")
}

// parseBlock decodes an mcmd= block (PMI-1 spawn): one key=value per
// line, values running to the end of their line.
func parseBlock(lines []string) request {
	req := request{proto: pmi1}
	for _, l := range lines {
		key, value, ok := strings.Cut(l, "=")
		if !ok || key == "" {
			req.bad = fmt.Sprintf("line %q is not key=value", clip(l))
			return req
		}
		req.items = append(req.items, item{key, value})
	}
	return withCmd(req, "mcmd")
}

// parseFrame decodes a PMI-2 body: key=value; items, ";;" inside a value
// standing for ";". Strict, but a trailing fragment without '=' is
// ignored: surplus bytes the calibration did not catch (the reader also
// cuts them at a NUL).
func parseFrame(body []byte) request {
	req := request{proto: pmi2}
	for s := string(body); s != ""; {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		key := s[:eq]
		if key == "" || strings.IndexByte(key, ';') >= 0 {
			req.bad = fmt.Sprintf("malformed item %q", clip(s))
			return req
		}
		var value string
		value, s = scanValue(s[eq+1:])
		req.items = append(req.items, item{key, value})
	}
	return withCmd(req, "cmd")
}

// scanValue reads a value up to its terminating ';' (one not followed by
// another) and returns it unescaped, with what follows the terminator. A
// value without a terminator runs to the end.
func scanValue(s string) (value, rest string) {
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

// withCmd moves the leading cmd item (named key) out of the items.
func withCmd(req request, key string) request {
	if len(req.items) == 0 || req.items[0].key != key || req.items[0].value == "" {
		req.bad = "does not start with " + key + "=<name>"
		return req
	}
	req.cmd, req.items = req.items[0].value, req.items[1:]
	return req
}

// clip shortens text quoted in log lines and replies.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// line1 formats a PMI-1 reply; ok is false when the client could not read
// it back intact: longer than the 1023 characters it reads per line, or
// with a newline inside. Values are written raw (PMI-1 has no escaping);
// only the last one may contain spaces.
func line1(cmd string, kv ...string) (string, bool) {
	var sb strings.Builder
	sb.WriteString("cmd=" + cmd)
	for i := 0; i+1 < len(kv); i += 2 {
		sb.WriteString(" " + kv[i] + "=" + kv[i+1])
	}
	body := sb.String()
	return body + "\n", len(body)+1 <= maxReply1 && !strings.Contains(body, "\n")
}

// maxReply1 is the longest PMI-1 reply line, newline included: the client
// reads 1023 characters and takes the rest for the next reply.
const maxReply1 = 1023

// frame2 formats a PMI-2 reply frame with an exact, left-aligned length
// (the client parses the field with atoi; Hydra right-aligns, both work).
// thrid, when the request carried one, is echoed right after cmd so that
// a threaded client can route the reply.
func frame2(cmd, thrid string, kv ...string) []byte {
	body := body2(cmd, thrid, kv...)
	return []byte(fmt.Sprintf("%-6d%s", len(body), body))
}

// body2 is a reply frame's body: cmd, thrid if any, then the items.
func body2(cmd, thrid string, kv ...string) string {
	var sb strings.Builder
	writeItem(&sb, "cmd", cmd)
	if thrid != "" {
		writeItem(&sb, "thrid", thrid)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		writeItem(&sb, kv[i], kv[i+1])
	}
	return sb.String()
}

func writeItem(sb *strings.Builder, key, value string) {
	sb.WriteString(key)
	sb.WriteByte('=')
	sb.WriteString(strings.ReplaceAll(value, ";", ";;"))
	sb.WriteByte(';')
}
