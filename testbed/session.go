package testbed

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"prsh/testbed/nodes"
)

// session is one ssh session channel and, once exec'd, its process.
type session struct {
	c    *Cluster
	n    *node
	conn *ssh.ServerConn
	ch   ssh.Channel
	// ctx ends when the channel is gone (closed by the peer, connection
	// dropped) or the cluster closes.
	ctx     context.Context
	started bool

	mu   sync.Mutex
	proc *os.Process // nil unless running and not yet reaped
}

// serveSession answers the channel's requests until the channel is gone.
func (c *Cluster) serveSession(n *node, sc *ssh.ServerConn, nc ssh.NewChannel) {
	defer c.wg.Done()
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	s := &session{c: c, n: n, conn: sc, ch: ch, ctx: ctx}
	for req := range reqs {
		s.handle(req)
	}
}

func (s *session) handle(req *ssh.Request) {
	switch req.Type {
	case "exec":
		var p struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &p); err != nil {
			req.Reply(false, nil)
			return
		}
		s.start(req, []string{"sh", "-c", p.Command})
	case "shell":
		s.start(req, []string{"-sh"}) // a login shell reading stdin
	case "signal":
		var p struct{ Signal string }
		ok := ssh.Unmarshal(req.Payload, &p) == nil && s.signal(p.Signal)
		req.Reply(ok, nil)
	default: // env (no AcceptEnv), pty-req, subsystem, window-change…
		req.Reply(false, nil)
	}
}

// start accepts the first exec or shell request and runs it; like sshd, a
// session runs one command at most.
func (s *session) start(req *ssh.Request, argv []string) {
	if s.started {
		req.Reply(false, nil)
		return
	}
	s.started = true
	req.Reply(true, nil)
	s.c.sessions.Add(1)
	s.n.firstOnce.Do(func() {
		s.c.armKillAfter(s.n)
		s.c.armDropLinks(s.n)
	})
	s.c.wg.Add(1)
	go s.run(argv)
}

// run waits for SSHLatency (and a Hold), runs the command, and reports
// how it ended.
func (s *session) run(argv []string) {
	defer s.c.wg.Done()
	defer s.ch.Close()
	if !s.sleep(s.c.cfg.SSHLatency) || !s.held() {
		return
	}
	if s.n.dead.Load() {
		s.exitSignal(syscall.SIGKILL, false)
		return
	}
	cmd := s.c.command(s.n, s.conn, argv)
	pp, err := startPiped(cmd)
	if err != nil {
		fmt.Fprintf(s.ch.Stderr(), "testbed: %s: %v\n", s.n.Name, err)
		s.exitStatus(127)
		return
	}
	s.c.logf("testbed: %s: pid %d: %q", s.n.Name, cmd.Process.Pid, argv)
	s.setProc(cmd.Process)
	s.c.trackProc(cmd.Process)
	if s.n.dead.Load() { // KillAfter fired while we were starting
		cmd.Process.Kill()
	}
	s.pump(pp)
	err = cmd.Wait()
	s.setProc(nil)
	s.c.untrackProc(cmd.Process)
	pp.wait()
	s.report(cmd.ProcessState, err)
}

// sleep waits d unless the channel goes away first; it reports whether
// the session should go on.
func (s *session) sleep(d time.Duration) bool {
	if d <= 0 {
		return s.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// held waits for the node's Hold fault to be released, unless the
// channel goes away first; it reports whether the session should go on.
func (s *session) held() bool {
	if s.n.fault.Hold == nil {
		return true
	}
	s.c.logf("testbed: %s: session held", s.n.Name)
	select {
	case <-s.n.fault.Hold:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// command builds the process the way sshd would: /bin/sh in a new session,
// login environment, working directory $HOME.
func (c *Cluster) command(n *node, sc *ssh.ServerConn, argv []string) *exec.Cmd {
	cmd := &exec.Cmd{
		Path:        "/bin/sh",
		Args:        argv,
		Env:         c.nodeEnv(n, sc),
		Dir:         nodes.HomeDir(),
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if c.cfg.UTS || len(c.cfg.Hide) > 0 {
		host := ""
		if c.cfg.UTS {
			host = n.Name
			cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUTS
		}
		if len(c.cfg.Hide) > 0 {
			cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS
		}
		cmd.Path = c.exe
		cmd.Args = append([]string{c.exe, utsHelperArg, host, strings.Join(c.cfg.Hide, ":"), "/bin/sh"}, argv...)
	}
	return cmd
}

func (c *Cluster) nodeEnv(n *node, sc *ssh.ServerConn) []string {
	rip, rport := splitAddr(sc.RemoteAddr())
	lip, lport := splitAddr(sc.LocalAddr())
	env := append([]string(nil), c.env...)
	env = append(env, c.cfg.Env...)
	if c.cfg.NodeTmp {
		env = append(env, "TMPDIR="+c.NodeTmpDir(n.Name))
	}
	return append(env,
		"SSH_CONNECTION="+rip+" "+rport+" "+lip+" "+lport,
		"SSH_CLIENT="+rip+" "+rport+" "+lport,
		EnvNode+"="+n.Name,
		EnvRun+"="+c.runID,
	)
}

func splitAddr(a net.Addr) (ip, port string) {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String(), strconv.Itoa(t.Port)
	}
	return "UNKNOWN", "0"
}

func (s *session) setProc(p *os.Process) {
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
}

// signal delivers an RFC 4254 "signal" request to the session's process
// group (the command runs in its own session, as under sshd).
func (s *session) signal(name string) bool {
	sig, ok := signalByName[name]
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return false
	}
	return syscall.Kill(-s.proc.Pid, sig) == nil
}

// report sends exit-status or exit-signal, after EOF, as OpenSSH does.
func (s *session) report(st *os.ProcessState, err error) {
	var ws syscall.WaitStatus
	ok := false
	if st != nil {
		ws, ok = st.Sys().(syscall.WaitStatus)
	}
	if !ok {
		fmt.Fprintf(s.ch.Stderr(), "testbed: %s: wait: %v\n", s.n.Name, err)
		s.exitStatus(255)
		return
	}
	s.c.logf("testbed: %s: pid %d: %v", s.n.Name, st.Pid(), st)
	if ws.Signaled() {
		s.exitSignal(ws.Signal(), ws.CoreDump())
		return
	}
	s.exitStatus(ws.ExitStatus())
}

func (s *session) exitStatus(code int) {
	s.ch.CloseWrite()
	s.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
}

func (s *session) exitSignal(sig syscall.Signal, core bool) {
	s.ch.CloseWrite()
	s.ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
		Signal     string
		CoreDumped bool
		Error      string
		Lang       string
	}{signalName(sig), core, "", ""}))
}

// Signal names of RFC 4254; OpenSSH sends "SIG@openssh.com" for others.
var signalByName = map[string]syscall.Signal{
	"ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM, "FPE": syscall.SIGFPE,
	"HUP": syscall.SIGHUP, "ILL": syscall.SIGILL, "INT": syscall.SIGINT,
	"KILL": syscall.SIGKILL, "PIPE": syscall.SIGPIPE, "QUIT": syscall.SIGQUIT,
	"SEGV": syscall.SIGSEGV, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2,
}

func signalName(sig syscall.Signal) string {
	for name, s := range signalByName {
		if s == sig {
			return name
		}
	}
	return "SIG@openssh.com"
}

// pipes connect a process to its channel. Own os.Pipe pairs rather than
// exec's StdoutPipe, because exec closes those on Wait, before we may have
// drained them, and stdout must reach the client before exit-status.
type pipes struct {
	stdin          *os.File // write end
	stdout, stderr *os.File // read ends
	closeOnce      sync.Once
	copies         sync.WaitGroup // stdout and stderr copies
}

func startPiped(cmd *exec.Cmd) (*pipes, error) {
	p := &pipes{}
	var child []*os.File
	defer func() {
		for _, f := range child {
			f.Close()
		}
	}()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	child = append(child, inR)
	outR, outW, err := os.Pipe()
	if err != nil {
		inW.Close()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	child = append(child, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	child = append(child, errW)
	p.stdin, p.stdout, p.stderr = inW, outR, errR
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// close drops our ends: the process sees EOF on stdin and EPIPE/SIGPIPE on
// its next write, as when sshd drops a channel. It never kills.
func (p *pipes) close() {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		p.stdout.Close()
		p.stderr.Close()
	})
}

func (p *pipes) wait() { p.copies.Wait() }

// pump starts the copies between channel and pipes. stdin is closed when
// the client sends EOF; everything is closed when the channel goes away.
func (s *session) pump(p *pipes) {
	s.c.wg.Add(3)
	go func() {
		defer s.c.wg.Done()
		io.Copy(p.stdin, s.ch)
		p.stdin.Close()
	}()
	p.copies.Add(2)
	for _, c := range []struct {
		dst io.Writer
		src *os.File
	}{{s.ch, p.stdout}, {s.ch.Stderr(), p.stderr}} {
		go func() {
			defer s.c.wg.Done()
			defer p.copies.Done()
			io.Copy(c.dst, c.src)
		}()
	}
	s.c.wg.Add(1)
	go func() {
		defer s.c.wg.Done()
		<-s.ctx.Done()
		p.close()
	}()
}
