package pmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// conv is one rank's conversation with Serve over a socket pair.
type conv struct {
	t      *testing.T
	c      net.Conn
	served chan error
	cancel context.CancelFunc
}

func startConv(t *testing.T, job *memJob, rank int) *conv {
	t.Helper()
	return startConvWith(t, job.rank(rank))
}

// startConvWith serves any Backend.
func startConvWith(t *testing.T, b Backend) *conv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	client, server := socketPair(t)
	cv := &conv{t: t, c: client, served: make(chan error, 1), cancel: cancel}
	go func() { cv.served <- Serve(ctx, server, b, testLogger(t)) }()
	t.Cleanup(func() {
		cancel()
		client.Close()
		<-cv.served // no log line may outlive the test
		cv.served <- nil
	})
	return cv
}

func (cv *conv) send(s string) {
	cv.t.Helper()
	_ = cv.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := cv.c.Write([]byte(s)); err != nil {
		cv.t.Fatalf("sending %q: %v", clip(s), err)
	}
}

func (cv *conv) expect(want string) {
	cv.t.Helper()
	if err := expect(cv.c, want); err != nil {
		cv.t.Fatalf("want %q: %v", clip(want), err)
	}
}

// silent checks that no reply comes for a while.
func (cv *conv) silent() {
	cv.t.Helper()
	_ = cv.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := cv.c.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		cv.t.Fatalf("want no reply, got %d bytes, %v", n, err)
	}
}

// result waits for Serve's return value.
func (cv *conv) result() error {
	cv.t.Helper()
	select {
	case err := <-cv.served:
		cv.served <- err
		return err
	case <-time.After(5 * time.Second):
		cv.t.Fatal("Serve did not return")
		return nil
	}
}

func oneRank(mapping string) *memJob {
	return newMemJob(JobInfo{Size: 1, KVSName: "kvs_t", UniverseSize: 1, ProcessMapping: mapping}, nil)
}

// fr frames a PMI-2 body with its exact length.
func fr(body string) string { return fmt.Sprintf("%-6d%s", len(body), body) }

const init2 = "cmd=init pmi_version=2 pmi_subversion=0\n"
const init2Reply = "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n"

// fullinit opens a PMI-2 conversation from a client with exact lengths.
func (cv *conv) fullinit(rank, size string) {
	cv.t.Helper()
	cv.send(init2)
	cv.expect(init2Reply)
	cv.send(string(frame2("fullinit", "", "pmirank", rank, "threaded", "FALSE")))
	cv.expect(string(frame2("fullinit-response", "", "pmi-version", "2", "pmi-subversion", "0",
		"rank", rank, "size", size, "appnum", "0", "debugged", "FALSE", "pmiverbose", "FALSE", "rc", "0")))
}

func (cv *conv) finalize1() {
	cv.t.Helper()
	cv.send("cmd=finalize\n")
	cv.expect("cmd=finalize_ack\n")
	if err := cv.result(); err != nil {
		cv.t.Fatalf("Serve after finalize: %v", err)
	}
}

// TestNodeAttrWaitsForPut: a getnodeattr with wait=TRUE that comes before
// the node root's put is answered by that put (WIRE.md §6.4).
func TestNodeAttrWaitsForPut(t *testing.T) {
	job := newMemJob(JobInfo{Size: 2, KVSName: "kvs_t", ProcessMapping: "(vector,(0,1,2))"}, nil)
	root, other := startConv(t, job, 0), startConv(t, job, 1)
	root.fullinit("0", "2")
	other.fullinit("1", "2")

	other.send(string(frame2("info-getnodeattr", "", "key", "absent", "wait", "FALSE")))
	other.expect(string(frame2("info-getnodeattr-response", "", "found", "FALSE", "rc", "0")))

	other.send(string(frame2("info-getnodeattr", "", "key", "-bcast-1-0", "wait", "TRUE")))
	other.silent()
	root.send(string(frame2("info-putnodeattr", "", "key", "-bcast-1-0", "value", "2F6465762F73686D")))
	root.expect(string(frame2("info-putnodeattr-response", "", "rc", "0")))
	other.expect(string(frame2("info-getnodeattr-response", "", "found", "TRUE", "value", "2F6465762F73686D", "rc", "0")))
	job.mu.Lock()
	defer job.mu.Unlock()
	if job.parked != 1 {
		t.Errorf("parked = %d, want 1", job.parked)
	}
}

// TestNodeAttrPerNode: an attribute put on one node is not seen on another.
func TestNodeAttrPerNode(t *testing.T) {
	job := newMemJob(JobInfo{Size: 2, KVSName: "kvs_t"}, []int{0, 1})
	a, b := startConv(t, job, 0), startConv(t, job, 1)
	a.fullinit("0", "2")
	b.fullinit("1", "2")
	a.send(string(frame2("info-putnodeattr", "", "key", "k", "value", "v")))
	a.expect(string(frame2("info-putnodeattr-response", "", "rc", "0")))
	b.send(string(frame2("info-getnodeattr", "", "key", "k", "wait", "FALSE")))
	b.expect(string(frame2("info-getnodeattr-response", "", "found", "FALSE", "rc", "0")))
}

// TestMalformedRequestsGetErrorReplies: the reply to anything unknown or
// ill-formed is an error in the client's own format, and the conversation
// goes on (a finalize still works afterwards).
func TestMalformedRequestsGetErrorReplies(t *testing.T) {
	tests := []struct{ name, send, want string }{
		{"unknown PMI-1 command", "cmd=frobnicate x=1\n", "cmd=frobnicate_result rc=-1 msg=unknown_command\n"},
		{"token without =", "cmd=put key\n", "cmd=error rc=-1 msg=malformed_command\n"},
		{"empty command", "cmd=\n", "cmd=error rc=-1 msg=malformed_command\n"},
		{"c but not cmd=", "command\n", "cmd=error rc=-1 msg=malformed_command\n"},
		{"put without key", "cmd=put kvsname=k value=1\n", "cmd=put_result rc=-1 msg=put_without_key\n"},
		{"bad mcmd block", "mcmd=spawn\nnprocs\nendcmd\n", "cmd=error rc=-1 msg=malformed_command\n"},
		{"unsupported version", "cmd=init pmi_version=3 pmi_subversion=0\n",
			"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n"},
		{"unknown PMI-2 command", fr("cmd=frob;x=1;;;;"), fr("cmd=frob-response;rc=1;errmsg=unknown command frob;")},
		{"PMI-2 frame without cmd", fr("key=val;"),
			fr("cmd=error;rc=1;errmsg=malformed command: does not start with cmd=<name>;")},
		{"PMI-2 empty key", fr("cmd=kvs-put;=x;"),
			fr(`cmd=error;rc=1;errmsg=malformed command: malformed item "=x;;";`)},
		{"PMI-2 put without key", fr("cmd=kvs-put;value=1;"),
			fr("cmd=kvs-put-response;rc=1;errmsg=kvs-put without a key;")},
		{"PMI-2 ring without count", fr("cmd=ring;ring-left=a;;;"),
			fr("cmd=ring-response;rc=1;errmsg=ring without a valid ring-count;")},
		{"PMI-2 job-connect", fr("cmd=job-connect;jobid=j;"),
			fr("cmd=job-connect-response;rc=1;errmsg=job-connect is not supported;")},
		{"PMI-2 allgather without a value", fr("cmd=allgather;thrid=0x1;"),
			fr("cmd=allgather-response;thrid=0x1;rc=1;errmsg=allgather without a value;")},
		{"PMI-2 allgather with a bad item", fr("cmd=allgather;value=a;;;=b;"),
			fr(`cmd=error;rc=1;errmsg=malformed command: malformed item "=b;;";`)},
		{"PMI-1 allgather", "cmd=allgather value=a\n", "cmd=allgather_result rc=-1 msg=unknown_command\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := startConv(t, oneRank(""), 0)
			cv.send(tt.send)
			cv.expect(tt.want)
			cv.finalize1()
		})
	}
}

// TestUnreadableInputEndsTheConnection: input that cannot be framed any
// further ends Serve with ErrProtocol.
func TestUnreadableInputEndsTheConnection(t *testing.T) {
	long := "cmd=put kvsname=k key=a value=" + strings.Repeat("x", maxLine) + "\n"
	tests := []struct{ name, send string }{
		{"over-long line", long},
		{"length not a number", "abcdef"},
		{"zero length", "0     "},
		{"negative length", "-5    cmd=x;"},
		{"length over the limit", "999999"},
		{"cut inside a frame", "20    cmd="},
		{"cut inside a frame header", "20"},
		{"cut inside a line", "cmd=get key=a"},
		{"cut inside an mcmd block", "mcmd=spawn\nnprocs=2\n"},
		{"endless mcmd block", "mcmd=spawn\n" + strings.Repeat("a=b\n", maxSpawnLines+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := startConv(t, oneRank(""), 0)
			go func() { // the server may stop reading half-way
				_, _ = cv.c.Write([]byte(tt.send))
				cv.c.Close()
			}()
			if err := cv.result(); !errors.Is(err, ErrProtocol) {
				t.Fatalf("Serve returned %v, want ErrProtocol", err)
			}
		})
	}
}

// TestPMI1ReplyLimit: a PMI-1 reply never exceeds the 1023 characters the
// client reads; a value that would not fit, or holds a newline, is refused.
func TestPMI1ReplyLimit(t *testing.T) {
	prefix := "cmd=get_result rc=0 msg=success value="
	fits := strings.Repeat("A", maxReply1-len(prefix)-1)
	job := oneRank("")
	job.store = map[string]string{"fits": fits, "long": fits + "A", "nl": "a\nb"}
	cv := startConv(t, job, 0)
	cv.send("cmd=get kvsname=kvs_t key=fits\n")
	cv.expect(prefix + fits + "\n")
	for _, key := range []string{"long", "nl"} {
		cv.send("cmd=get kvsname=kvs_t key=" + key + "\n")
		cv.expect("cmd=get_result rc=-1 msg=value_too_long_for_PMI-1 value=unknown\n")
	}
	cv.finalize1()
}

// TestPMI2ValueLimit: a value longer than a PMI-2 client parses is an error.
func TestPMI2ValueLimit(t *testing.T) {
	job := oneRank("")
	job.store = map[string]string{"long": strings.Repeat("A", maxValue2+1)}
	cv := startConv(t, job, 0)
	cv.fullinit("0", "1")
	cv.send(string(frame2("kvs-get", "", "jobid", "kvs_t", "srcid", "-1", "key", "long")))
	cv.expect(string(frame2("kvs-get-response", "", "rc", "1", "errmsg", "value too long for PMI-2")))
}

// TestNoMapping: without a mapping PMI-1 says "not found" (MPICH then
// exchanges host names) and PMI-2 says found=FALSE.
func TestNoMapping(t *testing.T) {
	job := newMemJob(JobInfo{Size: 1, KVSName: "kvs_t"}, nil)
	cv := startConv(t, job, 0)
	cv.send("cmd=get kvsname=kvs_t key=PMI_process_mapping\n")
	cv.expect("cmd=get_result rc=-1 msg=key_PMI_process_mapping_not_found value=unknown\n")
	cv.send("cmd=get_universe_size\n")
	cv.expect("cmd=universe_size size=-1\n")
	cv.send(string(frame2("info-getjobattr", "", "key", "PMI_process_mapping")))
	cv.expect(string(frame2("info-getjobattr-response", "", "found", "FALSE", "rc", "0")))
}

// TestInitack: the PMI_PORT + PMI_ID handshake gets its four lines.
func TestInitack(t *testing.T) {
	job := newMemJob(JobInfo{Size: 4, KVSName: "kvs_t"}, nil)
	cv := startConv(t, job, 2)
	cv.send("cmd=initack pmiid=2\n")
	cv.expect("cmd=initack\ncmd=set size=4\ncmd=set rank=2\ncmd=set debug=0\n")
}

// TestCancelEndsAWaitingFence: a rank waiting in a fence that will never
// complete is released when the daemon cancels.
func TestCancelEndsAWaitingFence(t *testing.T) {
	job := newMemJob(JobInfo{Size: 2, KVSName: "kvs_t"}, nil)
	cv := startConv(t, job, 0)
	cv.send("cmd=barrier_in\n")
	cv.silent()
	cv.cancel()
	if err := cv.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v, want context.Canceled", err)
	}
	_ = cv.c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := cv.c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("connection not closed: %v", err)
	}
}

// TestAbortHoldsTheConnection: after abort the socket stays open until the
// daemon ends the context, so that MPI_Abort cannot return.
func TestAbortHoldsTheConnection(t *testing.T) {
	job := oneRank("")
	cv := startConv(t, job, 0)
	cv.send("cmd=abort exitcode=7\n")
	cv.silent()
	select {
	case err := <-cv.served:
		t.Fatalf("Serve returned %v while the job was not killed yet", err)
	default:
	}
	job.mu.Lock()
	aborts := job.aborts
	job.mu.Unlock()
	if len(aborts) != 1 || aborts[0] != 7 {
		t.Fatalf("aborts = %v, want [7]", aborts)
	}
	cv.cancel()
	if err := cv.result(); !errors.Is(err, ErrAborted) {
		t.Fatalf("Serve returned %v, want ErrAborted", err)
	}
}

// TestSilentClient: a program that never speaks PMI is not an error.
func TestSilentClient(t *testing.T) {
	cv := startConv(t, oneRank(""), 0)
	cv.c.Close()
	if err := cv.result(); err != nil {
		t.Fatalf("Serve returned %v, want nil", err)
	}
}

// TestCloseBeforeFinalize: a client that used PMI and then went away.
func TestCloseBeforeFinalize(t *testing.T) {
	cv := startConv(t, oneRank(""), 0)
	cv.send("cmd=get_maxes\n")
	cv.expect("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n")
	cv.c.Close()
	if err := cv.result(); !errors.Is(err, ErrClosedEarly) {
		t.Fatalf("Serve returned %v, want ErrClosedEarly", err)
	}
}

// TestRequestsAreServedInOrder: a client may send a fence, a get and an
// allgather in one write without reading (Ifence, then Get, then
// Iallgather): nothing is answered until the fence completes, then the
// replies come in order, the get seeing the fence's data.
func TestRequestsAreServedInOrder(t *testing.T) {
	job := newMemJob(JobInfo{Size: 2, KVSName: "kvs_t"}, nil)
	a, b := startConv(t, job, 0), startConv(t, job, 1)
	a.fullinit("0", "2")
	b.fullinit("1", "2")
	a.send(fr("cmd=kvs-fence;") + fr("cmd=kvs-get;jobid=kvs_t;srcid=1;key=k1;") + fr("cmd=allgather;value=v0;"))
	a.silent()
	b.send(fr("cmd=kvs-put;key=k1;value=v1;"))
	b.expect(fr("cmd=kvs-put-response;rc=0;"))
	a.silent() // the put alone completes nothing
	b.send(fr("cmd=kvs-fence;"))
	b.expect(fr("cmd=kvs-fence-response;rc=0;"))
	a.expect(fr("cmd=kvs-fence-response;rc=0;"))
	a.expect(fr("cmd=kvs-get-response;found=TRUE;value=v1;rc=0;"))
	a.silent() // the allgather waits for rank 1
	b.send(fr("cmd=allgather;value=v1;"))
	want := fr("cmd=allgather-response;rc=0;count=2;lengths=2,2;values=v0v1;")
	b.expect(want)
	a.expect(want)
}

// gatherStub answers Allgather with fixed values or an error.
type gatherStub struct {
	nopBackend
	size   int
	values []string
	err    error
}

func (g gatherStub) Info() JobInfo {
	info := g.nopBackend.Info()
	info.Size = g.size
	return info
}

func (g gatherStub) Allgather(context.Context, string) ([]string, error) { return g.values, g.err }

// TestAllgatherFailures: what the daemon cannot deliver is an error reply
// for the client, and the conversation goes on.
func TestAllgatherFailures(t *testing.T) {
	big := fill(17, 60000)
	lengths, all := packValues(big)
	bigBody := body2("allgather-response", "", "rc", "0", "count", "17", "lengths", lengths, "values", all)
	tests := []struct {
		name string
		stub gatherStub
		want string
	}{
		{"backend error", gatherStub{size: 2, err: errors.New("daemon lost")},
			"allgather failed: daemon lost"},
		{"wrong count", gatherStub{size: 3, values: []string{"a", "b"}},
			"allgather gave 2 values for 3 ranks"},
		{"too long for a frame", gatherStub{size: 17, values: big},
			fmt.Sprintf("allgather result of %d bytes exceeds the PMI-2 frame limit of 999999", len(bigBody))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := startConvWith(t, tt.stub)
			cv.send(fr("cmd=allgather;value=x;"))
			cv.expect(fr("cmd=allgather-response;rc=1;errmsg=" + tt.want + ";"))
			cv.finalize1()
		})
	}
}

func fill(n, size int) []string {
	values := make([]string, n)
	for i := range values {
		values[i] = strings.Repeat("x", size)
	}
	return values
}

// TestAllgatherFrameLimit: a result whose reply body is exactly 999999
// bytes is sent; one byte more is refused, never sent with a 7-digit
// length the client would misread. Escaping counts: ';' takes two bytes.
func TestAllgatherFrameLimit(t *testing.T) {
	overhead := len(body2("allgather-response", "", "rc", "0", "count", "1", "lengths", "999999", "values", ""))
	n := maxBody2 - overhead // a 6-digit length, like the 999999 above
	fits := startConvWith(t, gatherStub{size: 1, values: fill(1, n)})
	fits.send(fr("cmd=allgather;value=x;"))
	fits.expect("999999cmd=allgather-response;rc=0;count=1;lengths=" +
		strconv.Itoa(n) + ";values=" + strings.Repeat("x", n) + ";")
	long := startConvWith(t, gatherStub{size: 1, values: []string{strings.Repeat(";", n/2) + "x"}})
	long.send(fr("cmd=allgather;value=x;"))
	long.expect(fr(fmt.Sprintf("cmd=allgather-response;rc=1;errmsg=allgather result of %d bytes exceeds the PMI-2 frame limit of 999999;",
		maxBody2+1)))
	long.finalize1()
}

// TestCancelEndsAWaitingAllgather: like a fence, an allgather that will
// never complete is released when the daemon cancels.
func TestCancelEndsAWaitingAllgather(t *testing.T) {
	job := newMemJob(JobInfo{Size: 2, KVSName: "kvs_t"}, nil)
	cv := startConv(t, job, 0)
	cv.fullinit("0", "2")
	cv.send(fr("cmd=allgather;value=v0;"))
	cv.silent()
	cv.cancel()
	if err := cv.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v, want context.Canceled", err)
	}
}
