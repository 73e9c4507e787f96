package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"prsh/internal/stall"
	"prsh/internal/tcp"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/ssh"
)

// SSHOptions configure the native ssh Agent.
type SSHOptions struct {
	// ConfigFile is the user's OpenSSH client config file; "" means
	// ~/.ssh/config if it exists.
	ConfigFile string
	// SystemConfigFile is read after ConfigFile, OpenSSH's first value
	// winning: "" means /etc/ssh/ssh_config if it exists, "none" none.
	SystemConfigFile string
	// User is the remote user when neither the host ("user@host") nor the
	// config says; default the current user.
	User string
	// ConnectTimeout bounds the TCP connect, then the silence of the
	// server during the ssh handshake and the start of the remote command
	// (a set-up that keeps progressing may take up to 6 times as long:
	// slow is not failed); default 10s. A ConnectTimeout in the config,
	// being per host, wins.
	ConnectTimeout time.Duration
	// MaxSessions is how many sessions this Agent opens at once; default
	// 64. More Start calls wait (honouring ctx). It bounds the opening
	// only, not how many started commands are alive: it keeps a wide tree
	// level from hammering sshd's MaxStartups and the local file table.
	MaxSessions int
	// Logger gets debug lines (commands, their output) and warnings
	// (unusable identity files); nil discards.
	Logger hclog.Logger
}

// SSH is the native ssh Agent. Each Start makes its own connection (every
// host differs) and runs Quote(argv) there; Close ends the session and the
// connection.
type SSH struct {
	opts  SSHOptions
	cfg   sshConfig
	log   hclog.Logger
	slots chan struct{} // MaxSessions semaphore

	keyMu    sync.Mutex
	keyCache map[string]ssh.Signer // identity file → signer, nil if unusable

	knownMu sync.Mutex // serializes appends to known_hosts
}

var _ Agent = (*SSH)(nil)

// NewSSH fills in the defaults and parses the config file once.
func NewSSH(opts SSHOptions) (*SSH, error) {
	if opts.User == "" {
		opts.User = localUser()
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 64
	}
	cfg, err := loadConfigs(opts.ConfigFile, opts.SystemConfigFile)
	if err != nil {
		return nil, err
	}
	return &SSH{
		opts:     opts,
		cfg:      cfg,
		log:      orNull(opts.Logger),
		slots:    make(chan struct{}, opts.MaxSessions),
		keyCache: map[string]ssh.Signer{},
	}, nil
}

// Start implements Agent. A connection the server drops before
// authentication (see dropError) is tried again, up to dropTries times.
func (s *SSH) Start(ctx context.Context, host string, argv []string, stdin []byte) (Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("ssh: empty argv")
	}
	t, err := s.resolve(host)
	if err != nil {
		return nil, err
	}
	log := s.log.With("host", host)
	for try := 1; ; try++ {
		p, err := s.launchOnce(ctx, t, argv, stdin, log)
		var drop *dropError
		if !errors.As(err, &drop) {
			return p, err
		}
		if try == dropTries {
			drop.tries = try
			return nil, drop
		}
		log.Debug("ssh connection dropped during the handshake; trying again", "try", try, "error", drop.err)
		if err := pause(ctx, dropBackoff(try)); err != nil {
			return nil, err
		}
	}
}

// launchOnce connects once and starts argv, holding a MaxSessions slot.
func (s *SSH) launchOnce(ctx context.Context, t *target, argv []string, stdin []byte, log hclog.Logger) (Process, error) {
	if err := takeTurn(ctx); err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	PassTurn(ctx)
	defer s.release()
	log.Debug("ssh launch", "addr", t.addr(), "user", t.user, "command", Quote(argv))
	client, guard, err := s.connect(ctx, t, 0)
	if err != nil {
		return nil, err
	}
	p, err := s.start(client, t, argv, log)
	if err != nil {
		guard.release()
		client.Close()
		return nil, guard.explain(ctx, err, "starting the command")
	}
	if !guard.release() {
		p.abort()
		client.Close()
		return nil, guard.explain(ctx, os.ErrDeadlineExceeded, "starting the command")
	}
	// How close a slow set-up came to its bounds (see connGuard).
	log.Debug("ssh command started", "after", time.Since(guard.start).Round(time.Millisecond))
	if err := p.feed(ctx, stdin); err != nil {
		return nil, err
	}
	return p, nil
}

// acquire takes one of the MaxSessions slots.
func (s *SSH) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *SSH) release() { <-s.slots }

// connect dials and authenticates; hops counts the jump hosts already on
// the way. The returned guard still holds the ConnectTimeout and ctx on
// the connection.
func (s *SSH) connect(ctx context.Context, t *target, hops int) (*ssh.Client, *connGuard, error) {
	conn, err := s.dial(ctx, t, hops)
	if err != nil {
		return nil, nil, err
	}
	guard := guardConn(ctx, conn, t.timeout)
	client, err := s.handshake(guard.watched(), t)
	if err == nil {
		return client, guard, nil
	}
	dropped := guard.release() && droppedEarly(err)
	err = guard.explain(ctx, err, "handshake")
	var hk hostKeyError
	if cc, ok := conn.(*commandConn); ok && !errors.As(err, &hk) {
		return nil, nil, cc.failed(err) // the proxy command's own words
	}
	conn.Close()
	if dropped {
		return nil, nil, &dropError{err: err}
	}
	return nil, nil, err
}

// handshake runs the ssh handshake: host key check, then public key auth
// with every key we have in one "publickey" method (x/crypto tries each
// method once, so separate methods for agent and files would not work).
func (s *SSH) handshake(conn net.Conn, t *target) (*ssh.Client, error) {
	hk, err := s.hostKeys(t)
	if err != nil {
		return nil, err
	}
	keys := s.keys(t)
	defer keys.close()
	cfg := &ssh.ClientConfig{
		User: t.user,
		Auth: []ssh.AuthMethod{ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			return t.algos.signers(keys.signers), nil
		})},
		HostKeyCallback: hk.check,
	}
	t.algos.apply(cfg, hk.algorithms())
	c, chans, reqs, err := ssh.NewClientConn(conn, t.addr(), cfg)
	if err != nil {
		return nil, handshakeError(err, t, len(keys.signers), s.authNotTried(t.asked))
	}
	return ssh.NewClient(c, chans, reqs), nil
}

// start opens a session and starts the command in it.
func (s *SSH) start(client *ssh.Client, t *target, argv []string, log hclog.Logger) (*proc, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("ssh: open session: %w", err)
	}
	sendEnv(sess, t)
	forwardAgent(client, sess, t, log)
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("ssh: %w", err)
	}
	stderr := newTail(log, "stderr")
	sess.Stderr = stderr
	stdout := newSignOfLife(log)
	sess.Stdout = stdout
	if err := sess.Start(Quote(argv)); err != nil {
		sess.Close()
		return nil, fmt.Errorf("ssh: start command: %w", err)
	}
	wait := func() error {
		err := sess.Wait()
		client.Close() // nothing more to do on this connection
		return err
	}
	stop := func() {
		sess.Close()
		client.Close()
	}
	kill := func() {
		if err := sess.Signal(ssh.SIGKILL); err != nil {
			log.Debug("ssh signal KILL", "error", err)
		}
	}
	return newProc(stdin, stderr, stdout, wait, stop, kill), nil
}

// connGuard holds the ConnectTimeout and ctx over a connection until the
// command has started: a server that accepts TCP and never speaks, or
// stalls later, must not hang Start. Slow is not failed: the timeout
// counts silence, so a handshake or a command start on an overloaded node
// that keeps progressing (bytes keep coming from the server, read or
// waiting to be) lives on, up to slowLimit times the timeout in all.
type connGuard struct {
	conn    net.Conn
	timeout time.Duration
	start   time.Time
	reads   atomic.Int64 // reads that brought bytes: the server progresses
	stopCtx func() bool

	mu       sync.Mutex
	timer    *stall.Timer
	seen     int64 // reads when the timer was set
	released bool
	struck   bool // the timer broke the connection
}

// slowLimit bounds a set-up that progresses, in ConnectTimeouts: a server
// that trickles its handshake forever must not hang Start either.
const slowLimit = 6

// guardConn bounds the connection's set-up by the timeout and ctx. It does
// not leave a deadline on the connection: one that expires after the
// command started, before release, would break the session's reader
// under a command that is running fine. It breaks the connection only
// when the timer or ctx strikes, and release says whether one did.
func guardConn(ctx context.Context, conn net.Conn, timeout time.Duration) *connGuard {
	g := &connGuard{conn: conn, timeout: timeout, start: time.Now()}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.timer = stall.AfterFunc(timeout, g.expire)
	g.stopCtx = context.AfterFunc(ctx, g.strike)
	return g
}

func (g *connGuard) strike() {
	if g.conn.SetDeadline(time.Unix(1, 0)) != nil {
		g.conn.Close() // a channel through a jump host has no deadlines
	}
}

// expire is the timer: it waits another timeout if the server sent
// anything since the last one, and breaks the connection otherwise. The
// timer counts only time in which this process ran (internal/stall).
func (g *connGuard) expire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return
	}
	if g.progressed() && time.Since(g.start) < slowLimit*g.timeout {
		g.seen = g.reads.Load()
		g.timer = stall.AfterFunc(g.timeout, g.expire)
		return
	}
	g.struck = true
	g.strike()
}

// progressed says the server sent something since the timer was set:
// bytes were read, or wait unread in this side's socket. Unread bytes mean
// that this side, not the server, did not run: on a machine so loaded
// that the timer ran before the reader (a process with many runnable
// goroutines polls its sockets late), the server answered a step, such
// as the command's start, in time.
func (g *connGuard) progressed() bool {
	return g.reads.Load() != g.seen || tcp.Unread(g.conn) > 0
}

// watched is the connection, counting the reads that bring bytes.
func (g *connGuard) watched() net.Conn { return progressConn{g.conn, &g.reads} }

// release lets the connection live as long as the command. It reports
// false if the timer or ctx struck first: the connection is broken.
func (g *connGuard) release() bool {
	g.mu.Lock()
	g.released = true
	g.timer.Stop()
	struck := g.struck
	g.mu.Unlock()
	ctxStopped := g.stopCtx()
	return !struck && ctxStopped
}

// explain turns an error caused by the guard into its cause: ctx's error
// or "ssh: handshake timed out after 5s".
func (g *connGuard) explain(ctx context.Context, err error, phase string) error {
	var hk hostKeyError
	switch {
	case errors.As(err, &hk):
		return hk.error
	case ctx.Err() != nil:
		return ctx.Err()
	case g.timedOut():
		if g.reads.Load() > 0 && time.Since(g.start) >= slowLimit*g.timeout {
			return fmt.Errorf("ssh: %s timed out: still not done after %s (%d × ConnectTimeout), the server slow but answering",
				phase, time.Since(g.start).Round(time.Second), slowLimit)
		}
		return fmt.Errorf("ssh: %s timed out after %s", phase, g.timeout)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("ssh: %s timed out after %s", phase, g.timeout)
	}
	return err
}

func (g *connGuard) timedOut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.struck
}

// progressConn counts the reads that bring bytes.
type progressConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c progressConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

// A server that closes a new connection before authentication (EOF or a
// reset in the handshake) is most likely refusing a burst of logins, as
// OpenSSH's sshd does past MaxStartups: the connection is tried again
// after a pause, dropTries times in all. The pauses double from
// dropBackoffBase with jitter, so a burst of clients spreads out: with
// these values the pauses add up to 3.75-7.5 s (0.5+1+2+4 s at most).
const (
	dropTries       = 5
	dropBackoffBase = 500 * time.Millisecond
)

// dropError is a connection dropped before authentication.
type dropError struct {
	err   error
	tries int // set on the last try
}

func (e *dropError) Error() string {
	return fmt.Sprintf("ssh: connection dropped during the handshake %d times (the node's sshd may be limiting concurrent logins: MaxStartups); last: %v",
		e.tries, e.err)
}

func (e *dropError) Unwrap() error { return e.err }

// droppedEarly tells a connection the server dropped from a handshake that
// failed for a reason of its own (authentication, host key, timeout).
func droppedEarly(err error) bool {
	var hk hostKeyError
	if errors.As(err, &hk) || strings.Contains(err.Error(), "unable to authenticate") {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dropBackoff is the pause after the try-th dropped connection: the
// doubling base, less a random part of up to a half.
func dropBackoff(try int) time.Duration {
	d := dropBackoffBase << (try - 1)
	return d - rand.N(d/2)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dialError words a failed dial: a name that does not resolve is reported
// as the resolver's answer alone ("lookup nosuchhost: no such host"),
// anything else as the dial error with an "ssh:" prefix.
func dialError(err error, timeout time.Duration) error {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		d := *dns
		d.Server = ""
		return &d
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("ssh: %w (ConnectTimeout %s)", err, timeout)
	}
	return fmt.Errorf("ssh: %w", err)
}

// handshakeError rewords x/crypto's authentication failure, which has no
// error type of its own; host key errors are left to connGuard.explain.
func handshakeError(err error, t *target, offered int, notTried string) error {
	if !strings.Contains(err.Error(), "unable to authenticate") {
		return err
	}
	why := fmt.Sprintf("%d keys offered", offered)
	if offered == 0 {
		why = "no keys: no ssh-agent, no usable identity file"
	}
	return fmt.Errorf("ssh: authentication failed for %s@%s (%s)%s", t.user, t.describe(), why, notTried)
}

// sendEnv passes the variables SendEnv and SetEnv name. As in OpenSSH, a
// server that does not accept one (sshd's AcceptEnv) is not an error.
func sendEnv(sess *ssh.Session, t *target) {
	set := map[string]bool{}
	for _, kv := range t.setEnv {
		name, value, _ := strings.Cut(kv, "=")
		if !set[name] {
			set[name] = true
			sess.Setenv(name, value)
		}
	}
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if !set[name] && envSent(t.sendEnv, name) {
			sess.Setenv(name, value)
		}
	}
}

// envSent applies SendEnv's patterns in order: the last that matches
// name decides, "-PATTERN" taking back what an earlier one sent.
func envSent(patterns []string, name string) bool {
	sent := false
	for _, p := range patterns {
		negated := strings.HasPrefix(p, "-")
		if ok, _ := path.Match(strings.TrimPrefix(p, "-"), name); ok {
			sent = !negated
		}
	}
	return sent
}
