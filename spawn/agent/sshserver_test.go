package agent

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// testServer is a small ssh server for the tests: public key auth against
// one key, exec requests run with /bin/sh -c, exit-status/exit-signal sent.
// It counts connections that are still being opened (from TCP accept to the
// exec reply) to check MaxSessions.
type testServer struct {
	t       *testing.T
	ln      net.Listener
	addr    string
	port    string
	hostKey ssh.Signer

	mu           sync.Mutex
	authKey      ssh.PublicKey
	authDelay    time.Duration
	extraHostKey ssh.Signer
	tweak        func(*ssh.ServerConfig) // narrows the server's algorithms
	agentKeys    []int                   // keys seen through each forwarded agent
	dropFirst    int                     // close this many connections at accept
	trickle      time.Duration           // pause before each write of the server
	execDelay    time.Duration           // pause before answering an exec request
	execPings    time.Duration           // during execDelay, a keep-alive this often (0: silent)
	dropped      int
	users        []string
	opening      int
	maxOpening   int
	conns        []net.Conn
	wg           sync.WaitGroup
}

// newKey generates an ed25519 signer.
func newKey(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newECDSAKey generates an ECDSA P-256 signer.
func newECDSAKey(t *testing.T) ssh.Signer {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startTestServer listens on 127.0.0.1:0 and accepts authKey.
func startTestServer(t *testing.T, authKey ssh.PublicKey) *testServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := &testServer{t: t, ln: ln, addr: ln.Addr().String(), port: port,
		hostKey: newKey(t), authKey: authKey}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.stop)
	return s
}

// stop closes the listener and every connection, then waits for all the
// server's goroutines.
func (s *testServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *testServer) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.dropped < s.dropFirst {
			s.dropped++
			s.mu.Unlock()
			conn.Close()
			continue
		}
		if s.trickle > 0 {
			conn = trickleConn{conn, s.trickle}
		}
		s.conns = append(s.conns, conn)
		s.opening++
		s.maxOpening = max(s.maxOpening, s.opening)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.handle(conn)
	}
}

// trickleConn pauses before each write: a server slow but progressing.
type trickleConn struct {
	net.Conn
	pause time.Duration
}

func (c trickleConn) Write(p []byte) (int, error) {
	time.Sleep(c.pause)
	return c.Conn.Write(p)
}

// opened counts a connection as no longer being opened, once.
func (s *testServer) opened(once *sync.Once) {
	once.Do(func() {
		s.mu.Lock()
		s.opening--
		s.mu.Unlock()
	})
}

// set changes the server's settings for the connections to come.
func (s *testServer) set(f func(s *testServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *testServer) config() *ssh.ServerConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	authKey, delay := s.authKey, s.authDelay
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(md ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			time.Sleep(delay)
			if string(key.Marshal()) != string(authKey.Marshal()) {
				return nil, errors.New("unknown key")
			}
			s.mu.Lock()
			s.users = append(s.users, md.User())
			s.mu.Unlock()
			return nil, nil
		},
	}
	cfg.AddHostKey(s.hostKey)
	if s.extraHostKey != nil {
		cfg.AddHostKey(s.extraHostKey)
	}
	if s.tweak != nil {
		s.tweak(cfg)
	}
	return cfg
}

func (s *testServer) handle(conn net.Conn) {
	defer s.wg.Done()
	defer conn.Close()
	var once sync.Once
	defer s.opened(&once)
	sc, chans, reqs, err := ssh.NewServerConn(conn, s.config())
	if err != nil {
		return
	}
	defer sc.Close()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); ssh.DiscardRequests(reqs) }()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.session(sc, ch, chReqs, &once)
	}
}

// listForwardedAgent asks the client's forwarded agent for its keys, as a
// program on the node would, and records how many it saw.
func (s *testServer) listForwardedAgent(sc ssh.Conn) {
	n := -1
	if ch, reqs, err := sc.OpenChannel("auth-agent@openssh.com", nil); err == nil {
		go ssh.DiscardRequests(reqs)
		if keys, err := agent.NewClient(ch).List(); err == nil {
			n = len(keys)
		}
		ch.Close()
	}
	s.mu.Lock()
	s.agentKeys = append(s.agentKeys, n)
	s.mu.Unlock()
}

// session serves one session channel: the first exec request runs.
func (s *testServer) session(sc ssh.Conn, ch ssh.Channel, reqs <-chan *ssh.Request, once *sync.Once) {
	defer s.wg.Done()
	defer ch.Close()
	for req := range reqs {
		if req.Type == "auth-agent-req@openssh.com" {
			req.Reply(true, nil)
			s.listForwardedAgent(sc)
			continue
		}
		var exe struct{ Command string }
		if req.Type != "exec" || ssh.Unmarshal(req.Payload, &exe) != nil {
			req.Reply(false, nil)
			continue
		}
		s.delayExec(sc)
		cmd := exec.Command("/bin/sh", "-c", exe.Command)
		stdin, err := cmd.StdinPipe()
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		if err == nil {
			err = cmd.Start()
		}
		s.opened(once) // before the reply, which lets the client go on
		req.Reply(err == nil, nil)
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); ssh.DiscardRequests(reqs) }() // ends when ch closes
		s.wg.Add(1)
		go func() { // ends at the client's EOF, or when ch closes below
			defer s.wg.Done()
			io.Copy(stdin, ch)
			stdin.Close()
		}()
		s.sendExit(ch, cmd.Wait())
		return
	}
}

// delayExec pauses for execDelay, as a server slow to start the command;
// with execPings it sends a keep-alive request that often meanwhile: slow
// but progressing.
func (s *testServer) delayExec(sc ssh.Conn) {
	s.mu.Lock()
	delay, every := s.execDelay, s.execPings
	s.mu.Unlock()
	if every == 0 {
		time.Sleep(delay)
		return
	}
	for end := time.Now().Add(delay); time.Now().Before(end); time.Sleep(every) {
		sc.SendRequest("keepalive@openssh.com", false, nil)
	}
}

func (s *testServer) sendExit(ch ssh.Channel, err error) {
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
		return
	}
	ws := xe.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		sig := struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: signalName(ws.Signal())}
		ch.SendRequest("exit-signal", false, ssh.Marshal(sig))
		return
	}
	ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(ws.ExitStatus())}))
}

func (s *testServer) lastUser() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.users) == 0 {
		return ""
	}
	return s.users[len(s.users)-1]
}

func (s *testServer) maxOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxOpening
}
