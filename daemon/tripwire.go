package daemon

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"prsh/daemon/protocol"
	"prsh/internal/tcp"
)

// pmixTripwire gives a rank without a PMIx server (a build without PMIx,
// a job that needs none, a server that did not start) the address where
// its server would be: a client that connects there is an Open MPI rank
// that would otherwise run as a singleton, and the job fails saying why.
// The daemon's ranks share one listener, opened at the first: a rank
// that needs no PMIx costs no descriptor and no goroutine for it.
// The tripwire's namespace is the job's own (a DVM job's names it), so a
// client that trips it names its job.
func (d *Daemon) pmixTripwire(ns string, rank int) ([]string, error) {
	if d.tripwire == "" {
		addr, err := d.openTripwire()
		if err != nil {
			return nil, err
		}
		d.tripwire = addr
	}
	uri := "prsh-no-pmix.0;tcp4://" + d.tripwire
	env := []string{"PMIX_NAMESPACE=" + ns, "PMIX_RANK=" + strconv.Itoa(rank)}
	for _, v := range []string{"41", "4", "3", "21", "2"} {
		env = append(env, "PMIX_SERVER_URI"+v+"="+uri)
	}
	return env, nil
}

// openTripwire listens on loopback until the daemon ends; each client
// that connects is named by the rank of the process it belongs to.
func (d *Daemon) openTripwire() (string, error) {
	job := d.machine.Job().ID
	ln, err := tcp.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("PMIx tripwire: %w", err)
	}
	go func() {
		<-d.ctx.Done()
		ln.Close()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go d.tripped(c, job)
		}
	}()
	return ln.Addr().String(), nil
}

// tripwireHit is a rank's client at the tripwire: the loop fails its job
// for the reason of that job (pmixWhyOf).
type tripwireHit struct{ job, rank int }

// tripwireHit fails the rank's job, unless the job is gone.
func (d *Daemon) tripwireHit(e tripwireHit) {
	if _, ok := d.jobs[e.job]; ok {
		d.step(protocol.PMIUnserved{Job: e.job, Rank: e.rank, Why: d.pmixWhyOf(e.job).Error()})
	}
}

// tripped fails the job for the rank whose client made conn. The
// connection is closed only once the loop has the failure: the client
// exits as soon as it is, and its exit must not be the first failure
// that reaches mpirun (a loaded machine can pause this goroutine between
// the two for long).
func (d *Daemon) tripped(conn net.Conn, job string) {
	defer conn.Close()
	num, rank, err := tripwireRank(conn, job)
	if err != nil {
		d.log.Warn("a PMIx client connected where there is no PMIx server, but is not known as a rank", "error", err)
		return
	}
	d.post(tripwireHit{num, rank})
}

// tripwireRank finds the DVM job (0: a plain mpirun's) and the rank
// whose client made conn: from its first message, which names the
// client's namespace (the job's ID, and "_N" for DVM job N) and then its
// rank, a big-endian uint32 (PMIx 3 and 4 alike); else from the process
// that holds the other end (its socket's inode in /proc/net/tcp, then the
// process with that socket among its descriptors) and its PMIX_NAMESPACE
// and PMIX_RANK, which every process a rank starts inherits.
func tripwireRank(conn net.Conn, job string) (num, rank int, err error) {
	if num, rank, ok := handshakeRank(conn, job); ok {
		return num, rank, nil
	}
	inode, err := peerInode(conn.RemoteAddr().(*net.TCPAddr).Port, conn.LocalAddr().(*net.TCPAddr).Port)
	if err != nil {
		return 0, 0, err
	}
	pid, err := socketHolder(inode)
	if err != nil {
		return 0, 0, err
	}
	environ, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
	if err != nil {
		return 0, 0, err
	}
	rank = -1
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("PMIX_RANK=")); ok {
			rank, _ = strconv.Atoi(string(v))
		}
		if v, ok := bytes.CutPrefix(kv, []byte("PMIX_NAMESPACE="+job)); ok {
			num, _ = jobSuffix(v)
		}
	}
	if rank < 0 {
		return 0, 0, fmt.Errorf("process %s has no PMIX_RANK", pid)
	}
	return num, rank, nil
}

// handshakeRank reads the client's first message, for a moment, until
// it holds a namespace of the job's and the four bytes after it.
func handshakeRank(conn net.Conn, job string) (num, rank int, ok bool) {
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	var msg []byte
	buf := make([]byte, 512)
	for len(msg) < 4096 {
		n, err := conn.Read(buf)
		msg = append(msg, buf[:n]...)
		if i := bytes.Index(msg, []byte(job)); i >= 0 {
			rest := msg[i+len(job):]
			end := bytes.IndexByte(rest, 0)
			if num, ok := jobSuffix(rest[:max(end, 0)]); ok && end >= 0 && len(rest) >= end+5 {
				return num, int(binary.BigEndian.Uint32(rest[end+1:])), true
			}
		}
		if err != nil {
			break
		}
	}
	return 0, 0, false
}

// jobSuffix reads what follows the job's ID in a namespace: nothing for
// a plain mpirun's job, "_N" for DVM job N.
func jobSuffix(s []byte) (int, bool) {
	if len(s) == 0 {
		return 0, true
	}
	digits, ok := bytes.CutPrefix(s, []byte("_"))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(digits))
	return n, err == nil && n > 0
}

// peerInode is the inode of the loopback TCP socket from port from to
// port to, from /proc/net/tcp (addresses in hex, the inode tenth).
func peerInode(from, to int) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	suffixFrom, suffixTo := fmt.Sprintf(":%04X", from), fmt.Sprintf(":%04X", to)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && strings.HasSuffix(fields[1], suffixFrom) && strings.HasSuffix(fields[2], suffixTo) {
			return fields[9], nil
		}
	}
	return "", fmt.Errorf("no socket from port %d to %d in /proc/net/tcp", from, to)
}

// socketHolder finds a process with socket inode among its descriptors.
func socketHolder(inode string) (string, error) {
	want := "socket:[" + inode + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && link == want {
			return strings.Split(fd, "/")[2], nil
		}
	}
	return "", fmt.Errorf("no process holds socket %s", inode)
}
