package client

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"prsh/modex"
)

// MaxLine1 is the longest PMI-1 request line Simple sends, newline
// included: MPICH's own client never writes more, and servers need not
// read more.
const MaxLine1 = 1024

// Simple is a PMI-1 ("simple") connection, MPICH's default wire, for the
// requests that go beyond the key-value space: MPI_Comm_spawn and the
// name service (../WIRE.md §4.3, §9). Like Client it is for one
// goroutine at a time.
type Simple struct {
	conn net.Conn
	br   *bufio.Reader
	err  error // once set, every call fails with it
}

// InitSimple speaks PMI-1 on conn, a connection to a PMI server that
// nobody has used yet, and takes ownership of it.
func InitSimple(conn net.Conn) (*Simple, error) {
	s := &Simple{conn: conn, br: bufio.NewReader(conn)}
	if _, err := s.call("response_to_init", "cmd=init pmi_version=1 pmi_subversion=1"); err != nil {
		s.fail(err)
		return nil, err
	}
	return s, nil
}

// Spawn starts a new job as Client.Spawn does, in one mcmd=spawn block
// per app and one reply for all (PMI-1 gives no job id). Arguments and
// values may hold spaces but no newline.
func (s *Simple) Spawn(req modex.SpawnRequest) error {
	blocks, err := spawnBlocks(req)
	if err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	for _, b := range blocks {
		if _, err := io.WriteString(s.conn, b); err != nil {
			return s.fail(ioError(err))
		}
	}
	rep, err := s.read("spawn_result")
	if err != nil {
		return err
	}
	for _, code := range strings.Split(rep["errcodes"], ",") {
		if code != "" && code != "0" {
			return &ServerError{Cmd: "spawn", Msg: "error codes " + clip(rep["errcodes"])}
		}
	}
	return nil
}

// spawnBlocks lays a request out as PMI-1 blocks, MPICH's way.
func spawnBlocks(req modex.SpawnRequest) ([]string, error) {
	if err := checkSpawn(req); err != nil {
		return nil, err
	}
	var blocks []string
	for i, app := range req.Apps {
		lines := []string{"mcmd=spawn", "nprocs=" + strconv.Itoa(app.NP), "execname=" + app.Argv[0],
			"totspawns=" + strconv.Itoa(len(req.Apps)), "spawnssofar=" + strconv.Itoa(i+1)}
		for j, arg := range app.Argv[1:] {
			lines = append(lines, "arg"+strconv.Itoa(j+1)+"="+arg)
		}
		lines = append(lines, "argcnt="+strconv.Itoa(len(app.Argv)-1))
		lines = appendLines(lines, "preput_num", "preput_key_", "preput_val_", req.Preput)
		lines = appendLines(lines, "info_num", "info_key_", "info_val_", app.Info)
		for _, l := range lines {
			if strings.Contains(l, "\n") || len(l)+1 > MaxLine1 {
				return nil, fmt.Errorf("%w: spawn line %q has a newline or exceeds %d bytes", ErrTooLong, clip(l), MaxLine1)
			}
		}
		blocks = append(blocks, strings.Join(lines, "\n")+"\nendcmd\n")
	}
	return blocks, nil
}

func appendLines(lines []string, count, keyPrefix, valPrefix string, m map[string]string) []string {
	lines = append(lines, count+"="+strconv.Itoa(len(m)))
	for i, k := range sortedKeys(m) {
		n := strconv.Itoa(i)
		lines = append(lines, keyPrefix+n+"="+k, valPrefix+n+"="+m[k])
	}
	return lines
}

// Publish is Client.Publish over PMI-1; service and port hold no spaces.
func (s *Simple) Publish(service, port string) error {
	_, err := s.named("publish_result", "cmd=publish_name", "service", service, "port", port)
	return err
}

// Lookup is Client.Lookup over PMI-1.
func (s *Simple) Lookup(service string) (string, error) {
	rep, err := s.named("lookup_result", "cmd=lookup_name", "service", service)
	return rep["port"], err
}

// Unpublish is Client.Unpublish over PMI-1.
func (s *Simple) Unpublish(service string) error {
	_, err := s.named("unpublish_result", "cmd=unpublish_name", "service", service)
	return err
}

// named sends a name-service request, whose values must be single
// tokens.
func (s *Simple) named(want, cmd string, kv ...string) (map[string]string, error) {
	line := cmd
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" || strings.ContainsAny(kv[i+1], " \n") {
			return nil, fmt.Errorf("%w: %s %q is empty or holds a space or newline", ErrUnsupported, kv[i], clip(kv[i+1]))
		}
		line += " " + kv[i] + "=" + kv[i+1]
	}
	if len(line)+1 > MaxLine1 {
		return nil, fmt.Errorf("%w: %s line of %d bytes", ErrTooLong, want, len(line)+1)
	}
	return s.call(want, line)
}

// Finalize ends the conversation.
func (s *Simple) Finalize() error {
	_, err := s.call("finalize_ack", "cmd=finalize")
	s.fail(fmt.Errorf("%w: finalized", ErrClosed))
	return err
}

// call sends one request line and reads its reply.
func (s *Simple) call(want, line string) (map[string]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	if _, err := io.WriteString(s.conn, line+"\n"); err != nil {
		return nil, s.fail(ioError(err))
	}
	return s.read(want)
}

// read reads a reply line named want; rc other than 0 is a *ServerError
// with the server's msg.
func (s *Simple) read(want string) (map[string]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	line, err := s.br.ReadString('\n')
	if err != nil {
		return nil, s.fail(ioError(err))
	}
	rep := map[string]string{}
	for _, tok := range strings.Fields(line) {
		k, v, _ := strings.Cut(tok, "=")
		if _, seen := rep[k]; !seen {
			rep[k] = v
		}
	}
	if rep["cmd"] != want {
		return nil, s.fail(fmt.Errorf("%w: %s expected, got %q", ErrProtocol, want, clip(line)))
	}
	if rc, ok := rep["rc"]; ok && rc != "0" {
		return rep, &ServerError{Cmd: strings.TrimSuffix(want, "_result"), Msg: rep["msg"]}
	}
	return rep, nil
}

// fail makes the connection unusable with err; it returns the first
// error.
func (s *Simple) fail(err error) error {
	if s.err == nil {
		s.err = err
		s.conn.Close()
	}
	return s.err
}
