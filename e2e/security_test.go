package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"prsh/testbed"
	"prsh/transport"
)

// secJob is a job running in the background whose ranks each create
// MARKS/RANK once started, then wait for MARKS/stop and say goodbye.
type secJob struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	marks          string
	ranks          int
}

// secRank is what every rank of a secJob runs.
const secRank = `touch "$MARKS/$PRSH_RANK"; while [ ! -e "$MARKS/stop" ]; do sleep 0.1; done; echo "bye $PRSH_RANK"`

// startSecJob starts mpirun with args and waits until every rank is up.
func startSecJob(t *testing.T, c *testbed.Cluster, ranks int, args ...string) *secJob {
	t.Helper()
	j := &secJob{marks: filepath.Join(t.TempDir(), "marks"), ranks: ranks, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	if err := os.Mkdir(j.marks, 0o755); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"-x", "MARKS", "-np", strconv.Itoa(ranks)}, args...)
	args = append(args, "sh", "-c", secRank)
	j.cmd = exec.Command(filepath.Join(bin, "mpirun"), args...)
	j.cmd.Env = append(os.Environ(), append(c.Env(), "MARKS="+j.marks)...)
	j.cmd.Stdout, j.cmd.Stderr = j.stdout, j.stderr
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.cmd.Process.Kill() })
	deadline := time.Now().Add(time.Minute)
	for {
		entries, _ := os.ReadDir(j.marks)
		if len(entries) == ranks {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d ranks started; stderr:\n%s", len(entries), ranks, j.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish lets the ranks end by themselves and checks that the job ends
// normally: exit 0, every rank's goodbye, nothing left running.
func (j *secJob) finish(t *testing.T, c *testbed.Cluster) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(j.marks, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if status := waitExit(t, j.cmd); status != 0 {
		t.Errorf("mpirun exited %d, want 0; stderr:\n%s", status, j.stderr)
	}
	got := lines(j.stdout.String())
	sort.Strings(got)
	var want []string
	for r := range j.ranks {
		want = append(want, "bye "+itoa(r))
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout:\n%s\nwant a goodbye from each of %d ranks", j.stdout, j.ranks)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running after the job ended: %+v", left)
	}
}

// daemons finds mpirun and every orted of the job, by the name their log
// lines carry: mpirun, orted.NODE.
func (j *secJob) daemons(t *testing.T, c *testbed.Cluster) map[int]string {
	t.Helper()
	out := map[int]string{j.cmd.Process.Pid: "mpirun"}
	for _, p := range c.Leftovers() {
		if isOrted(strings.Fields(p.Cmdline)) {
			out[p.PID] = "orted." + p.Node
		}
	}
	return out
}

// listeningAddrs lists the TCP addresses pid listens on: the sockets among
// its open files that /proc/net/tcp{,6} shows in state LISTEN.
func listeningAddrs(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("open files of %d: %v", pid, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if ino, ok := strings.CutPrefix(link, "socket:["); ok && err == nil {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			addr, err := procNetAddr(fields[1])
			if err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			addrs = append(addrs, addr)
		}
		f.Close()
	}
	return addrs
}

// procNetAddr decodes an address of /proc/net/tcp: the IP as 32-bit words
// in host (little-endian) order, then the port, all in hex.
func procNetAddr(s string) (string, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(ipHex)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", fmt.Errorf("bad port in %q", s)
	}
	return net.JoinHostPort(net.IP(raw).String(), strconv.Itoa(int(port))), nil
}

// helloSize is the listener's first message: magic and nonce.
const helloSize = 5 + 32

// readHello connects to addr from localIP and reads the listener's
// hello, which also proves that addr is a daemon's port.
func readHello(addr, localIP string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	raw.SetDeadline(time.Now().Add(time.Minute))
	hello := make([]byte, helloSize)
	if _, err := io.ReadFull(raw, hello); err != nil || !bytes.HasPrefix(hello, []byte("PRSH")) {
		raw.Close()
		return nil, fmt.Errorf("hello %q, %v; not a daemon's port?", hello, err)
	}
	return raw, nil
}

// dropped waits for the daemon to close a hostile connection, and checks
// that it said nothing beyond its hello.
func dropped(raw net.Conn) error {
	defer raw.Close()
	n, err := io.Copy(io.Discard, raw)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return errors.New("the daemon kept the connection open")
	}
	if n != 0 {
		return fmt.Errorf("the daemon answered with %d bytes", n)
	}
	return nil
}

// knock is one stranger at one daemon's door, and what the daemon should
// log about it.
type knock struct {
	daemon string // as it logs: mpirun, orted.NODE
	addr   string // its listening address
	from   string // the stranger's IP, distinct for every knock
	reason string
}

// TestSecurityHostilePeers: while a job runs, strangers knock on mpirun's
// port and every orted's: one sends garbage, one connects and says
// nothing, one runs the real handshake with a wrong secret. Each is turned
// away and logged with its address, and the job goes on to end normally.
func TestSecurityHostilePeers(t *testing.T) {
	const nodes = 4
	c := cluster(t, testbed.Config{Nodes: nodes})
	// At debug level mpirun passes on what the orteds log.
	j := startSecJob(t, c, nodes, "--spawn-degree", "2", "--log-level", "debug")
	daemons := j.daemons(t, c)
	if len(daemons) != nodes+1 {
		t.Fatalf("found %d daemons, want mpirun and %d orteds: %v", len(daemons), nodes, daemons)
	}
	const (
		garbage = "not a prsh peer"
		silent  = "i/o timeout" // the daemon's handshake deadline
	)
	wrongSecret := transport.ErrBadProof.Error()
	pmiPorts := rankServerAddrs(c, j)
	var knocks []knock
	for pid, name := range daemons {
		var addrs []string
		for _, a := range listeningAddrs(t, pid) {
			if !pmiPorts[a] {
				addrs = append(addrs, a)
			} else if !strings.HasPrefix(a, "127.0.0.1:") {
				t.Errorf("%s serves its ranks PMI on %s, beyond loopback", name, a)
			}
		}
		if len(addrs) == 0 {
			t.Fatalf("%s (pid %d) listens nowhere", name, pid)
		}
		for _, a := range addrs {
			for _, reason := range []string{garbage, silent, wrongSecret} {
				// Strangers come from 127.9.0.0/16, which nothing else uses,
				// so that the log lines tell them apart.
				from := fmt.Sprintf("127.9.%d.%d", len(knocks)/250, 1+len(knocks)%250)
				knocks = append(knocks, knock{daemon: name, addr: a, from: from, reason: reason})
			}
		}
	}
	var wg sync.WaitGroup
	for _, k := range knocks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch k.reason {
			case garbage, silent:
				var raw net.Conn
				if raw, err = readHello(k.addr, k.from); err != nil {
					break
				}
				if k.reason == garbage {
					raw.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n" + strings.Repeat("\x00garbage", 16)))
				}
				err = dropped(raw)
			default:
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				wrong, _ := transport.NewSecret()
				conn, derr := transport.Dial(ctx, "tcp://"+k.addr, wrong, transport.Options{LocalIP: k.from})
				switch {
				case derr == nil:
					conn.Close()
					err = errors.New("a dialer with a wrong secret got in")
				case !errors.Is(derr, transport.ErrBadProof):
					err = fmt.Errorf("wrong secret refused with %v, want ErrBadProof", derr)
				}
			}
			if err != nil {
				t.Errorf("%s at %s, stranger expecting %q: %v", k.daemon, k.addr, k.reason, err)
			}
		}()
	}
	wg.Wait()
	j.finish(t, c)
	log := lines(j.stderr.String())
	for _, k := range knocks {
		found := false
		for _, l := range log {
			if strings.Contains(l, k.daemon+".transport: rejected connection") && strings.Contains(l, "peer="+k.from+":") {
				found = true
				if !strings.Contains(l, k.reason) {
					t.Errorf("%s logged %s without saying %q:\n%s", k.daemon, k.from, k.reason, l)
				}
			}
		}
		if !found {
			t.Errorf("%s did not log the rejected peer %s (%s); log:\n%s", k.daemon, k.from, k.reason, j.stderr)
		}
	}
}

// hex64 is how the secret would look if it leaked: it travels hex-encoded,
// 64 digits, on each orted's stdin.
var hex64 = regexp.MustCompile(`[0-9a-fA-F]{64}`)

// TestSecurityNoSecretInProcs: the job secret shows in no process's argv
// or environment, nor in mpirun's trace log.
//
// The test cannot know the secret from outside, so it checks for anything
// that could be it: the secret is 32 random bytes and travels only as 64
// hex digits on an orted's stdin, so a leak into argv, environ or a log
// would show as a run of 64 hex digits. Runs already present in the test's
// own environment came from outside the job and cannot be its secret
// (made afresh by mpirun), so they are allowed. A variable named like
// PRSH_SECRET would be a leak whatever its encoding.
// rankServerAddrs lists the addresses where the ranks' environment says
// their PMI servers listen (PMI_PORT, and the PMIx library's own TCP
// port): not the daemons' transport, and guarded by their own rules
// (the rank's user and a one-time id; the library's handshake).
func rankServerAddrs(c *testbed.Cluster, j *secJob) map[string]bool {
	addrs := map[string]bool{}
	for _, p := range c.Leftovers() {
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if err != nil || p.PID == j.cmd.Process.Pid {
			continue
		}
		for _, kv := range strings.Split(string(environ), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			switch {
			case k == "PMI_PORT":
				addrs[v] = true
			case strings.HasPrefix(k, "PMIX_SERVER_URI"):
				if _, tcp, ok := strings.Cut(v, "tcp4://"); ok {
					addrs[tcp] = true
				}
			}
		}
	}
	return addrs
}

func TestSecurityNoSecretInProcs(t *testing.T) {
	const nodes = 4
	c := cluster(t, testbed.Config{Nodes: nodes, Slots: 2})
	j := startSecJob(t, c, 2*nodes, "--spawn-degree", "2", "--log-level", "trace", "--stdin", "all")
	inherited := map[string]bool{}
	for _, kv := range os.Environ() {
		for _, h := range hex64.FindAllString(kv, -1) {
			inherited[h] = true
		}
	}
	procs := map[int]string{j.cmd.Process.Pid: "mpirun"}
	for _, p := range c.Leftovers() {
		if p.PID != j.cmd.Process.Pid {
			procs[p.PID] = p.Node + ": " + p.Cmdline
		}
	}
	var orteds, ranks int
	ortedStdin := map[string]bool{}
	rankPIDs := map[int]string{}
	for pid, name := range procs {
		cmdline, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		environ, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err1 != nil || err2 != nil {
			if name == "mpirun" || isOrted(strings.Fields(name)[1:]) {
				t.Fatalf("%s (pid %d) gone while the job runs: %v %v", name, pid, err1, err2)
			}
			continue // a rank's short-lived sleep
		}
		for what, block := range map[string][]byte{"argv": cmdline, "environment": environ} {
			for _, h := range hex64.FindAllString(string(block), -1) {
				if !inherited[h] {
					t.Errorf("%s (pid %d): its %s holds 64 hex digits, maybe the secret: %s", name, pid, what, h)
				}
			}
		}
		for _, kv := range strings.Split(string(environ), "\x00") {
			if k, _, _ := strings.Cut(kv, "="); strings.Contains(strings.ToUpper(k), "SECRET") {
				t.Errorf("%s (pid %d): environment variable %s", name, pid, k)
			}
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		fd0, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid))
		switch {
		case isOrted(args):
			orteds++
			ortedStdin[fd0] = true
		case bytes.Contains(environ, []byte("\x00PRSH_RANK=")):
			ranks++
			rankPIDs[pid] = fd0
		}
	}
	if orteds != nodes || ranks < 2*nodes {
		t.Fatalf("found %d orteds and %d rank processes, want %d and at least %d: %v", orteds, ranks, nodes, 2*nodes, procs)
	}
	// Each orted's stdin carries the secret; no rank may read from it.
	for pid, fd0 := range rankPIDs {
		if ortedStdin[fd0] {
			t.Errorf("rank process %d (%s) shares its orted's stdin %s, which carries the secret", pid, procs[pid], fd0)
		}
	}
	j.finish(t, c)
	for _, h := range hex64.FindAllString(j.stderr.String(), -1) {
		t.Errorf("mpirun's trace log holds 64 hex digits, maybe the secret: %s", h)
	}
	t.Logf("checked %d processes (%d orteds, %d rank processes) and %d lines of trace log", len(procs), orteds, ranks, len(lines(j.stderr.String())))
}

// TestPMIIDNotLogged: the ids ranks present on PMI_PORT appear nowhere in
// mpirun's trace log, which carries the orteds' logs too.
func TestPMIIDNotLogged(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	wrapper := "echo PMI_ID=$PMI_ID; unset PMI_FD; exec 3>&-; exec " + hello
	res := mpirun(t, c, "-np", "4", "--log-level", "trace", "sh", "-c", wrapper)
	if res.status != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var ids int
	for _, l := range lines(res.stdout) {
		if id, ok := strings.CutPrefix(l, "PMI_ID="); ok {
			ids++
			if id == "" || strings.Contains(res.stderr, id) {
				t.Errorf("PMI_ID %q is empty or in the log:\n%s", id, res.stderr)
			}
		}
	}
	if ids != 4 || !strings.Contains(res.stderr, "PMI_PORT") {
		t.Fatalf("%d ids, want 4; or the log does not show the ranks on PMI_PORT:\n%s", ids, res.stderr)
	}
}
