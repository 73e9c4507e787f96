// Package client is a PMI-2 client for Go programs started by prsh's
// mpirun (or by any launcher that passes a PMI-2 socket in PMI_FD): rank
// and size, the job's key-value store (Put, Fence, Get), and the
// extensions of the seed papers — PMIX_Allgather, PMIX_Iallgather and
// PMIX_KVS_Ifence with PMIX_Wait (Chakraborty et al.), and Slurm's
// PMIX_Ring (Moody) — and MPI_Comm_spawn and the name service (Spawn,
// Publish, Lookup, Unpublish), which Simple also offers over PMI-1. The
// wire is in ../EXTENSIONS.md and ../WIRE.md; it needs no cgo and no MPI
// library.
//
//	c, err := client.Init() // errors.Is(err, client.ErrNotLaunched) without mpirun
//	req, _ := c.Iallgather(myAddress)
//	... work that does not need the others ...
//	addrs, err := req.Wait() // addrs[r] is rank r's address
//	c.Finalize()
//
// # Concurrency
//
// A Client and its Requests are not safe for concurrent use: call them
// from one goroutine at a time (or behind a mutex). All calls share one
// socket, on which the server answers requests strictly in order.
//
// # Non-blocking calls
//
// Ifence and Iallgather send their request and return at once; the
// launcher's daemons progress the collective without this process, and
// Request.Wait reads the result. As the paper's implementation does, a
// Client allows one outstanding non-blocking request: until its Wait has
// returned, starting another collective (Fence, Ifence, Allgather,
// Iallgather, Ring) or Finalize fails with ErrOutstanding. Put and Get may
// be called meanwhile, but since the server answers in order they return
// only once the outstanding collective has completed: such a Put belongs
// to the next fence, and such a Get sees what the Ifence committed.
package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// Client is one process's PMI-2 connection to its launcher.
type Client struct {
	conn               net.Conn
	br                 *bufio.Reader
	rank, size, appNum int
	jobID              string
	spawner            string     // the job that spawned this one, if any
	queue              []*Request // sent, reply not read yet, oldest first
	async              *Request   // the non-blocking request not waited for yet
	err                error      // once set, every call fails with it
}

// Request is a non-blocking collective in progress (PMIX_Request).
type Request struct {
	c      *Client
	cmd    string                        // the request, for errors
	decode func(reply) ([]string, error) // turns the reply into Wait's values
	done   bool                          // the reply has been read, or the connection failed
	rep    reply
	err    error
	waited bool
	values []string
}

// Ring is what Client.Ring gives one rank.
type Ring struct {
	Count int    // the sum of the counts given by the ranks before this one in the ring
	Left  string // the right value given by the rank before this one, wrapping round
	Right string // the left value given by the rank after this one, wrapping round
}

// Init connects to the launcher as PMI_FD, PMI_RANK, PMI_SIZE and
// PMI_JOBID describe (mpirun sets all four). Without PMI_FD it returns
// ErrNotLaunched. The rank and size the server announces must agree with
// PMI_RANK and PMI_SIZE. The descriptor is replaced by a close-on-exec
// duplicate, so programs the process starts do not inherit the socket.
func Init() (*Client, error) {
	fdText := os.Getenv("PMI_FD")
	if fdText == "" {
		return nil, ErrNotLaunched
	}
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 0 {
		return nil, fmt.Errorf("pmi: PMI_FD=%q is not a file descriptor", fdText)
	}
	rank, err := envInt("PMI_RANK")
	if err != nil {
		return nil, err
	}
	size, err := envInt("PMI_SIZE")
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "pmi")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("pmi: PMI_FD=%d is not a connected socket: %w", fd, err)
	}
	c, err := InitConn(conn, rank, os.Getenv("PMI_JOBID"))
	if err != nil {
		return nil, err
	}
	if c.rank != rank || c.size != size {
		c.conn.Close()
		return nil, fmt.Errorf("pmi: the server says rank %d of %d, but PMI_RANK=%d and PMI_SIZE=%d",
			c.rank, c.size, rank, size)
	}
	return c, nil
}

func envInt(name string) (int, error) {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("pmi: %s=%q is not a number, though PMI_FD is set", name, os.Getenv(name))
	}
	return v, nil
}

// InitConn speaks PMI-2 on conn, a connection to a PMI server that nobody
// has used yet, and takes ownership of it. rank and jobID are what the
// process was told (PMI_RANK, PMI_JOBID); the server only logs them, and
// a negative rank or empty jobID is left out. The server's rank and size
// are authoritative.
func InitConn(conn net.Conn, rank int, jobID string) (*Client, error) {
	c := &Client{conn: conn, br: bufio.NewReader(conn)}
	if err := c.handshake(rank, jobID); err != nil {
		c.fail(err)
		return nil, err
	}
	return c, nil
}

// handshake: the PMI-1 init line that every PMI-2 client opens with, then
// fullinit (threaded last: the server calibrates its framing on that
// item) and job-getid, whose answer kvs-get must quote.
func (c *Client) handshake(rank int, jobID string) error {
	if _, err := io.WriteString(c.conn, "cmd=init pmi_version=2 pmi_subversion=0\n"); err != nil {
		return ioError(err)
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("%w: over-long init reply", ErrProtocol)
		}
		return ioError(err)
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 || fields[0] != "cmd=response_to_init" {
		return fmt.Errorf("%w: init answered with %q", ErrProtocol, clip(string(line)))
	}
	if !contains(fields, "rc=0") {
		return &ServerError{Cmd: "init", Msg: strings.TrimSpace(string(line))}
	}
	var kv []string
	if jobID != "" {
		kv = append(kv, "pmijobid", jobID)
	}
	if rank >= 0 {
		kv = append(kv, "pmirank", strconv.Itoa(rank))
	}
	rep, err := c.call("fullinit", append(kv, "threaded", "FALSE")...)
	if err != nil {
		return err
	}
	for key, p := range map[string]*int{"rank": &c.rank, "size": &c.size, "appnum": &c.appNum} {
		v, _ := rep.get(key)
		if *p, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("%w: fullinit-response with %s=%q", ErrProtocol, key, clip(v))
		}
	}
	c.spawner, _ = rep.get("spawner-jobid")
	if rep, err = c.call("job-getid"); err != nil {
		return err
	}
	c.jobID, _ = rep.get("jobid")
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Rank is this process's rank in the job.
func (c *Client) Rank() int { return c.rank }

// Size is the number of ranks in the job.
func (c *Client) Size() int { return c.size }

// AppNum is the index of this rank's application context (MPI_APPNUM).
func (c *Client) AppNum() int { return c.appNum }

// JobID is the job's id as the server names it (its KVS name).
func (c *Client) JobID() string { return c.jobID }

// Put records key=value for the next fence: the other ranks can Get it
// once every rank has completed that fence. Keys hold 1 to MaxKey bytes,
// values at most MaxValue (what the server can hand back); putting a key
// twice between fences leaves either value.
func (c *Client) Put(key, value string) error {
	if key == "" || len(key) > MaxKey {
		return fmt.Errorf("%w: key of %d bytes (1 to %d)", ErrTooLong, len(key), MaxKey)
	}
	if len(value) > MaxValue {
		return fmt.Errorf("%w: value of %d bytes for %q (at most %d)", ErrTooLong, len(value), clip(key), MaxValue)
	}
	_, err := c.call("kvs-put", "key", key, "value", value)
	return err
}

// Get reads key from what the last completed fence committed; a key that
// was not there fails with ErrNotFound at once (the server never waits).
func (c *Client) Get(key string) (string, error) {
	rep, err := c.call("kvs-get", "jobid", c.jobID, "srcid", "-1", "key", key)
	if err != nil {
		return "", err
	}
	if found, _ := rep.get("found"); found != "TRUE" {
		return "", fmt.Errorf("%w: %q", ErrNotFound, clip(key))
	}
	value, _ := rep.get("value")
	return value, nil
}

// Fence commits every rank's puts: it returns once all ranks have entered
// it (PMI2_KVS_Fence).
func (c *Client) Fence() error {
	r, err := c.Ifence()
	if err != nil {
		return err
	}
	_, err = r.Wait()
	return err
}

// Ifence starts a fence and returns at once (PMIX_KVS_Ifence); Wait
// completes it, with no values. Gets made before Wait return only once the
// fence is done.
func (c *Client) Ifence() (*Request, error) { return c.start("kvs-fence", nil) }

// Allgather gives value, any bytes, and returns every rank's value in rank
// order once all ranks have entered (PMIX_Allgather). The values are not
// stored: Get does not see them. The whole result must fit one reply frame
// (999999 bytes with lengths and escaping, EXTENSIONS.md); a larger one is
// a *ServerError for every rank.
func (c *Client) Allgather(value string) ([]string, error) {
	r, err := c.Iallgather(value)
	if err != nil {
		return nil, err
	}
	return r.Wait()
}

// Iallgather starts an Allgather and returns at once (PMIX_Iallgather);
// Wait gives the values.
func (c *Client) Iallgather(value string) (*Request, error) {
	return c.start("allgather", unpackValues, "value", value)
}

// start sends a collective, refusing it while another is outstanding.
func (c *Client) start(cmd string, decode func(reply) ([]string, error), kv ...string) (*Request, error) {
	if c.async != nil {
		return nil, ErrOutstanding
	}
	r, err := c.send(cmd, kv...)
	if err != nil {
		return nil, err
	}
	r.decode, c.async = decode, r
	return r, nil
}

// Wait blocks until the request's collective has completed and returns
// its values (nil for Ifence). Calling it again returns the same result.
func (r *Request) Wait() ([]string, error) {
	if r == nil {
		return nil, errors.New("pmi: Wait on a nil Request")
	}
	if !r.waited {
		rep, err := r.c.await(r)
		if err == nil && r.decode != nil {
			if r.values, err = r.decode(rep); err != nil {
				r.c.fail(err) // the server is not the one we know
			}
		}
		r.err, r.waited = err, true
		if r.c.async == r {
			r.c.async = nil
		}
	}
	return r.values, r.err
}

// Ring is PMIX_Ring, Slurm's ring exchange: every rank gives a count and
// two values, and gets the sum of the counts of the ranks before it, the
// right value of the rank before it and the left value of the rank after
// it (in rank order here, wrapping round). The C call PMIX_Ring(value,
// &rank, &ranks, left, right) is Ring(1, value, value), with rank the
// Count and ranks the Size.
func (c *Client) Ring(count int, left, right string) (Ring, error) {
	if c.async != nil {
		return Ring{}, ErrOutstanding
	}
	rep, err := c.call("ring", "ring-count", strconv.Itoa(count), "ring-left", left, "ring-right", right)
	if err != nil {
		return Ring{}, err
	}
	var out Ring
	n, _ := rep.get("ring-count")
	if out.Count, err = strconv.Atoi(n); err != nil {
		return Ring{}, c.fail(fmt.Errorf("%w: ring-response with ring-count=%q", ErrProtocol, clip(n)))
	}
	out.Left, _ = rep.get("ring-left")
	out.Right, _ = rep.get("ring-right")
	return out, nil
}

// Finalize ends the conversation; the process may go on without PMI. It
// fails with ErrOutstanding while a non-blocking request waits for Wait.
func (c *Client) Finalize() error {
	if c.async != nil {
		return ErrOutstanding
	}
	_, err := c.call("finalize")
	c.fail(fmt.Errorf("%w: finalized", ErrClosed))
	return err
}

// Abort asks the launcher to end the whole job with this exit status
// (MPI_Abort); msg is shown with it. The launcher kills every rank, this
// one included, so Abort normally never returns. It returns nil when the
// connection ends without the process being killed, and at once when an
// earlier request is still unanswered (the server reads the abort only
// after it, so waiting could hang): the program should then exit with
// status itself, which ends the job as a rank that died.
func (c *Client) Abort(status int, msg string) error {
	if c.err != nil {
		return c.err
	}
	// The server reads the status out of MPICH's wording.
	text := fmt.Sprintf("application called MPI_Abort(MPI_COMM_WORLD, %d) - process %d", status, c.rank)
	if msg != "" {
		text += ": " + clip(msg)
	}
	b, err := frame("abort", "isworld", "TRUE", "msg", text)
	if err != nil {
		return err
	}
	if _, err := c.conn.Write(b); err != nil {
		return c.fail(ioError(err))
	}
	if len(c.queue) == 0 {
		_, _ = io.Copy(io.Discard, c.br) // no reply comes: wait to be killed
	}
	c.fail(fmt.Errorf("%w: aborted", ErrClosed))
	return nil
}

// call sends a request and waits for its reply.
func (c *Client) call(cmd string, kv ...string) (reply, error) {
	r, err := c.send(cmd, kv...)
	if err != nil {
		return reply{}, err
	}
	return c.await(r)
}

// send writes a request and queues it for its reply.
func (c *Client) send(cmd string, kv ...string) (*Request, error) {
	if c.err != nil {
		return nil, c.err
	}
	b, err := frame(cmd, kv...)
	if err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(b); err != nil {
		return nil, c.fail(ioError(err))
	}
	r := &Request{c: c, cmd: cmd}
	c.queue = append(c.queue, r)
	return r, nil
}

// await reads replies, which come in request order, until r's is in.
// Replies to earlier requests are kept in theirs for their Wait.
func (c *Client) await(r *Request) (reply, error) {
	for !r.done {
		rep, err := readFrame(c.br)
		if err != nil {
			c.fail(err)
			break
		}
		head := c.queue[0]
		c.queue = c.queue[1:]
		head.done, head.rep = true, rep
		switch rc, _ := rep.get("rc"); {
		case rep.cmd != head.cmd+"-response" && rep.cmd != "error":
			head.err = c.fail(fmt.Errorf("%w: %s answered with %q", ErrProtocol, head.cmd, clip(rep.cmd)))
		case rc != "0":
			msg, _ := rep.get("errmsg")
			if msg == "" {
				msg = "rc=" + rc
			}
			head.err = &ServerError{Cmd: head.cmd, Msg: msg}
		}
	}
	return r.rep, r.err
}

// fail makes the connection unusable with err, closing it and failing
// every request still waiting for a reply; it returns the first error.
func (c *Client) fail(err error) error {
	if c.err == nil {
		c.err = err
		c.conn.Close()
	}
	for _, r := range c.queue {
		r.done, r.err = true, c.err
	}
	c.queue = nil
	return c.err
}
