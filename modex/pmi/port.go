package pmi

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/internal/tcp"
)

// initackWait bounds how long a connection on the port may take to
// present its id: a client sends initack as soon as it has connected.
const initackWait = 10 * time.Second

// Port is PMI_PORT: how a rank's PMI client that does not hold the socket
// it inherited (a tool, or a wrapper that closed descriptor 3) reaches its
// server, as MPICH's simple client does with PMI_PORT and PMI_ID. Only
// that rank may speak for itself (EXTENSIONS.md, "PMI_PORT"):
//
//   - the port listens on 127.0.0.1, so only this host can connect;
//   - the connecting socket must belong to the port's own user, so no
//     other user of the host can connect (MPICH reads PMI_ID with atoi:
//     31 bits would not hold off someone who can try them all);
//   - its first line must be "cmd=initack pmiid=<id>" with an id the port
//     handed out and nobody has presented yet: each id is accepted once;
//   - anything else closes the connection at once.
//
// An id is a secret: it goes to its rank's environment only, never to a
// log or an argv.
type Port struct {
	ln  net.Listener
	uid int
	// owner gives the user of the socket at local, connected to remote.
	owner func(local, remote net.Addr) (int, error)
	log   hclog.Logger

	mu      sync.Mutex
	waiting map[uint32]func(net.Conn) // ids not yet presented, and who serves each
	issued  map[uint32]bool           // every id handed out: none is handed out twice
}

// ListenPort opens a port on 127.0.0.1 chosen by the system.
func ListenPort(log hclog.Logger) (*Port, error) {
	ln, err := tcp.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("PMI_PORT: %w", err)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Port{ln: ln, uid: os.Getuid(), owner: tcpOwner, log: log,
		waiting: map[uint32]func(net.Conn){}, issued: map[uint32]bool{}}, nil
}

// Addr is the port's address as PMI_PORT gives it: 127.0.0.1:<port>.
func (p *Port) Addr() string { return p.ln.Addr().String() }

// Expect hands out a fresh id. The first connection that presents it is
// given to serve, on a goroutine of its own, with its initack line still
// to be read: Serve answers it.
func (p *Port) Expect(serve func(net.Conn)) (id string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		n, err := randomID()
		if err != nil {
			return "", fmt.Errorf("PMI_PORT id: %w", err)
		}
		if !p.issued[n] {
			p.issued[n] = true
			p.waiting[n] = serve
			return strconv.FormatUint(uint64(n), 10), nil
		}
	}
}

// randomID draws an id from 1 to 2^31-1: what the client's atoi and %d
// carry unchanged.
func randomID() (uint32, error) {
	var b [4]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if n := binary.BigEndian.Uint32(b[:]) & 0x7fffffff; n != 0 {
			return n, nil
		}
	}
}

// Forget withdraws an id nobody presented: its rank has ended.
func (p *Port) Forget(id string) {
	n, err := strconv.ParseUint(id, 10, 31)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiting, uint32(n))
}

// claim takes the server of id, once.
func (p *Port) claim(id uint32) func(net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	serve := p.waiting[id]
	delete(p.waiting, id)
	return serve
}

// Serve accepts connections until ctx ends, then closes the port. It
// returns why the port stopped accepting before that (no descriptor
// left): a rank whose connection waits unaccepted would wait forever.
func (p *Port) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { p.ln.Close() })
	defer stop()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go p.admit(conn)
	}
}

// admit hands a connection that presented a valid id to its server and
// closes any other. The reason is logged, never the line: it may hold
// someone's id.
func (p *Port) admit(conn net.Conn) {
	serve, replay, err := p.handshake(conn)
	if err != nil {
		p.log.Warn("PMI_PORT connection refused", "peer", conn.RemoteAddr().String(), "reason", err)
		conn.Close()
		return
	}
	serve(replay)
}

// handshake checks who connected and which id it presents; it returns
// the id's server and the connection with its initack line to read again.
func (p *Port) handshake(conn net.Conn) (func(net.Conn), net.Conn, error) {
	uid, err := p.owner(conn.RemoteAddr(), conn.LocalAddr())
	if err != nil {
		return nil, nil, err
	}
	if uid != p.uid {
		return nil, nil, fmt.Errorf("connected by user %d, not %d", uid, p.uid)
	}
	lift := tcp.Bound(conn, initackWait)
	line, err := readInitack(conn)
	lift()
	if err != nil {
		return nil, nil, err
	}
	id, ok := initackID(line)
	if !ok {
		return nil, nil, errors.New("the initack's id is not a positive int in decimal")
	}
	serve := p.claim(id)
	if serve == nil {
		return nil, nil, errors.New("unknown or already used id")
	}
	return serve, &replayed{Conn: conn, r: io.MultiReader(strings.NewReader(line+"\n"), conn)}, nil
}

// initackPrefix is how MPICH's client opens a PMI_PORT connection
// ("cmd=initack pmiid=%d\n", then it waits for the reply).
const initackPrefix = "cmd=initack pmiid="

// maxIDDigits is the length of the largest id, 2^31-1.
const maxIDDigits = 10

// readInitack reads the initack line a byte at a time and stops at the
// first byte that cannot belong to it: a client that says anything else
// is refused at once, and nothing after the line is taken from the
// connection, so Serve reads the rest.
func readInitack(conn net.Conn) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := conn.Read(b); err != nil {
			return "", fmt.Errorf("no initack line: %w", err)
		}
		switch n := len(line); {
		case b[0] == '\n' && n > len(initackPrefix):
			return string(line), nil
		case n < len(initackPrefix) && b[0] == initackPrefix[n]:
		case n >= len(initackPrefix) && n < len(initackPrefix)+maxIDDigits && '0' <= b[0] && b[0] <= '9':
		default:
			return "", errors.New("the first line is not cmd=initack pmiid=<id>")
		}
		line = append(line, b[0])
	}
}

// initackID reads the id of an initack line, written as the client
// writes it: %d of a positive int.
func initackID(line string) (uint32, bool) {
	v := strings.TrimPrefix(line, initackPrefix)
	n, err := strconv.ParseUint(v, 10, 31)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != v {
		return 0, false
	}
	return uint32(n), true
}

// replayed is a connection whose first bytes, read by the handshake, are
// read again.
type replayed struct {
	net.Conn
	r io.Reader
}

func (c *replayed) Read(b []byte) (int, error) { return c.r.Read(b) }
