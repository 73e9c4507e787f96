//go:build pmix

package pmix

/*
#cgo pkg-config: pmix hwloc
#cgo LDFLAGS: -Wl,--as-needed -ldl
#include <pmix.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/cgo"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Available says whether this binary has the PMIx server.
const Available = true

// Server is the library's server in this process (there can be one).
type Server struct {
	handler  Handler
	queue    upcalls
	topology string   // this node's, as hwloc XML; "" if unknown
	store    []string // what each client is told of the shared-memory store
	clients  clients
}

// active is the server the library's upcalls reach.
var active atomic.Pointer[Server]

// Start initialises the library: its rendezvous socket goes in tmpdir,
// which only this daemon uses, and it knows this node as host, the name
// the node map gives it. A server for many jobs (a DVM's, each job a
// namespace registered and deregistered) keeps their data in the
// library's hash store only: PMIx 4.2's shared-memory store (ds21) keeps
// a lock segment mapped per namespace until the library finalises,
// 10 KiB and a mapping a job. Other servers make that store's segments
// of sizes segs, and tell their clients so.
func Start(tmpdir, host string, manyJobs bool, segs Segments, h Handler) (*Server, error) {
	if why := C.prsh_load_library(); why != nil {
		return nil, fmt.Errorf("pmix: cannot load the PMIx library: %s", C.GoString(why))
	}
	s := &Server{handler: h}
	if !active.CompareAndSwap(nil, s) {
		return nil, fmt.Errorf("pmix: a server already runs in this process")
	}
	s.queue.wake = make(chan struct{}, 1)
	go s.queue.deliver()
	l := newList()
	l.str(C.PMIX_SERVER_TMPDIR, tmpdir)
	l.str(C.PMIX_SYSTEM_TMPDIR, tmpdir)
	l.str(C.PMIX_HOSTNAME, host)
	l.flag(C.PMIX_SERVER_TOOL_SUPPORT, false)
	l.flag(C.PMIX_SERVER_SYSTEM_SUPPORT, false)
	if err := l.err; err != nil {
		return nil, err
	}
	// The parameters are read once, by the init; unset for whatever this
	// process starts next.
	// The library holds a report of a lost client back for a second, to
	// merge it with others: Settle wants each at once.
	params := []string{envStores + "=hash", envCachingWindow + "=0"}
	if !manyJobs {
		params = append(segs.env(), envCachingWindow+"=0")
		s.store = params
	}
	for _, kv := range params {
		name, value, _ := strings.Cut(kv, "=")
		os.Setenv(name, value)
		defer os.Unsetenv(name)
	}
	if rc := C.prsh_server_init(l.ptr); rc != C.PMIX_SUCCESS {
		active.Store(nil)
		return nil, status("PMIx_server_init", rc)
	}
	if xml := C.prsh_topology_xml(); xml != nil {
		s.topology = C.GoString(xml)
		C.free(unsafe.Pointer(xml))
	}
	return s, nil
}

// envStores is the library's parameter that names the stores (gds
// components) it may open.
const envStores = "PMIX_MCA_gds"

// envCachingWindow is the library's parameter for how long (s) it holds
// an event back to merge it with others of its kind.
const envCachingWindow = "PMIX_MCA_pmix_event_caching_window"

// Topology is the node's hardware topology as the library loaded it, as
// hwloc XML; "" if unknown.
func (s *Server) Topology() string { return s.topology }

// Sync waits, at most for wait, until the Handler has had every upcall
// the library made before the call: what a rank told its server before
// it exited is known before its exit is.
func (s *Server) Sync(wait time.Duration) {
	done := make(chan struct{})
	s.queue.push(func(Handler) { close(done) })
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// Settle waits, at most for wait, until the library has had the last of
// a client that connected (its finalize, or its connection lost without
// one), and then until the Handler has had every upcall: the rank ended,
// but a server short of CPU may not have read what its client wrote
// before it exited. PMIx_Finalize waits 2 s for the server's answer and
// then exits all the same.
func (s *Server) Settle(namespace string, rank int, wait time.Duration) {
	deadline := time.Now().Add(wait)
	if last := s.clients.last(Proc{namespace, rank}); last != nil {
		select {
		case <-last:
		case <-time.After(wait):
		}
	}
	s.Sync(time.Until(deadline))
}

// clients follows the clients that connected until the library has had
// the last of each.
type clients struct {
	mu   sync.Mutex
	open map[Proc]chan struct{} // closed by the client's last word
}

func (c *clients) connected(p Proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[Proc]chan struct{}{}
	}
	if c.open[p] == nil {
		c.open[p] = make(chan struct{})
	}
}

func (c *clients) ended(p Proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last := c.open[p]; last != nil {
		close(last)
		delete(c.open, p)
	}
}

// forget lets go of the clients of a namespace the library let go of.
func (c *clients) forget(namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, last := range c.open {
		if p.Namespace == namespace {
			close(last)
			delete(c.open, p)
		}
	}
}

// last is closed once client p's last word is in; nil if the library
// has it already, or the client never connected.
func (c *clients) last(p Proc) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[p]
}

// Close finalises the library.
func (s *Server) Close() {
	C.prsh_server_finalize()
	s.queue.close()
}

// RegisterJob tells the library about the job, in a namespace of its
// own: sizes, which node holds each rank, and which of them are this
// node's.
func (s *Server) RegisterJob(j Job) error {
	l := jobInfo(j)
	if s.topology != "" {
		l.str(C.PMIX_LOCAL_TOPO, s.topology)
	}
	if l.err != nil {
		return l.err
	}
	ns := C.CString(j.Namespace)
	defer C.free(unsafe.Pointer(ns))
	mine := localRanks(j)
	if rc := C.prsh_register_nspace(ns, C.int(len(mine)), l.ptr); rc != C.PMIX_SUCCESS {
		return status("PMIx_server_register_nspace", rc)
	}
	return registerClients(ns, mine)
}

// registerClients registers the node's ranks of a namespace before any
// starts, all at once (see prsh_register_clients).
func registerClients(ns *C.char, ranks []int) error {
	if len(ranks) == 0 {
		return nil
	}
	ids := make([]C.uint32_t, len(ranks))
	for i, r := range ranks {
		ids[i] = C.uint32_t(r)
	}
	if rc := C.prsh_register_clients(ns, &ids[0], C.size_t(len(ids)), C.uint32_t(os.Getuid()), C.uint32_t(os.Getgid())); rc != C.PMIX_SUCCESS {
		return status("PMIx_server_register_client", rc)
	}
	return nil
}

// DeregisterJob makes the library let go of the namespace ns and its
// clients: the job has ended, and a server that outlives it (a DVM's)
// must not keep its data.
func (s *Server) DeregisterJob(ns string) error {
	cns := C.CString(ns)
	defer C.free(unsafe.Pointer(cns))
	defer s.clients.forget(ns)
	if rc := C.prsh_deregister_nspace(cns); rc != C.PMIX_SUCCESS {
		return status("PMIx_server_deregister_nspace", rc)
	}
	return nil
}

// Client returns the environment local rank of namespace ns (registered
// by RegisterJob) needs to find this server.
func (s *Server) Client(namespace string, rank int) ([]string, error) {
	ns := C.CString(namespace)
	defer C.free(unsafe.Pointer(ns))
	var env **C.char
	if rc := C.prsh_setup_fork(ns, C.uint32_t(rank), &env); rc != C.PMIX_SUCCESS {
		return nil, status("PMIx_server_setup_fork", rc)
	}
	return append(takeEnv(env), s.store...), nil
}

// LocalData asks the library for what local rank put, for another
// daemon's direct-modex request; answer gets it (or the error) once the
// rank has committed it, on this package's goroutine (never the caller's:
// the caller may be the loop that answer posts to).
func (s *Server) LocalData(namespace string, rank int, answer func([]byte, error)) {
	ns := C.CString(namespace)
	defer C.free(unsafe.Pointer(ns))
	h := cgo.NewHandle(answer)
	if rc := C.prsh_dmodex_request(ns, C.uint32_t(rank), C.uintptr_t(h)); rc != C.PMIX_SUCCESS {
		h.Delete()
		err := status("PMIx_server_dmodex_request", rc)
		upcall(func(Handler) { answer(nil, err) })
	}
}

// takeEnv copies a NULL-terminated array of C strings and frees it.
func takeEnv(env **C.char) []string {
	if env == nil {
		return nil
	}
	var out []string
	for p := env; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		out = append(out, C.GoString(*p))
		C.free(unsafe.Pointer(*p))
	}
	C.free(unsafe.Pointer(env))
	return out
}

func status(call string, rc C.int) error {
	return fmt.Errorf("pmix: %s: %s", call, C.GoString(C.prsh_error_string(rc)))
}

// Reply answers one fence or direct-modex request, once.
type Reply struct {
	call *C.prsh_call_t
	once sync.Once
}

// Send gives the library data, or the error.
func (r *Reply) Send(data []byte, err error) {
	r.once.Do(func() {
		var buf *C.char
		if len(data) > 0 {
			buf = (*C.char)(C.CBytes(data))
		}
		C.prsh_reply(r.call, C.int(code(err)), buf, C.size_t(len(data)))
	})
}

func code(err error) C.pmix_status_t {
	switch err {
	case nil:
		return C.PMIX_SUCCESS
	case ErrTimeout:
		return C.PMIX_ERR_TIMEOUT
	case ErrNotFound:
		return C.PMIX_ERR_NOT_FOUND
	case ErrDuplicate:
		return C.PMIX_ERR_DUPLICATE_KEY
	}
	return C.PMIX_ERROR
}

// localRanks lists the ranks on this server's node.
func localRanks(j Job) []int {
	var mine []int
	for r, n := range j.RankNode {
		if n == j.Node {
			mine = append(mine, r)
		}
	}
	return mine
}

// jobInfo is the namespace's registration: job, node and per-rank
// facts, in the keys Open MPI reads at start-up.
func jobInfo(j Job) *list {
	nodes, index := jobNodes(j)
	mine := localRanks(j)
	size := uint32(len(j.RankNode))
	l := newList()
	l.str(C.PMIX_JOBID, j.Namespace)
	l.u32(C.PMIX_UNIV_SIZE, size)
	l.u32(C.PMIX_JOB_SIZE, size)
	l.u32(C.PMIX_MAX_PROCS, size)
	apps := j.Apps()
	l.u32(C.PMIX_JOB_NUM_APPS, uint32(len(apps)))
	if len(apps) == 1 { // one program: its facts are the job's
		l.u32(C.PMIX_APP_SIZE, size)
		l.u32(C.PMIX_APPNUM, 0)
		l.rank(C.PMIX_APPLDR, 0)
	} else {
		for _, a := range apps {
			l.sub(C.PMIX_APP_INFO, appInfo(a))
		}
	}
	l.u32(C.PMIX_NUM_NODES, uint32(len(nodes)))
	l.flag(C.PMIX_SPAWNED, j.Parent != nil)
	if j.Parent != nil {
		l.parent(*j.Parent)
	}
	if j.TmpDir != "" {
		l.str(C.PMIX_TMPDIR, j.TmpDir)
	}
	l.nodeMap(nodeNames(j, nodes))
	l.procMap(procMap(j, nodes))
	if len(mine) > 0 {
		localInfo(l, j, mine, index)
	}
	placed := map[int]int{} // ranks of each node so far: the next one's local rank
	for r, n := range j.RankNode {
		l.sub(C.PMIX_PROC_DATA, procInfo(j, r, appOf(apps, r), index[n], placed[n]))
		placed[n]++
	}
	return l
}

// localInfo is what the namespace's registration says of this node,
// which holds the ranks mine; a job connected to local ranks, with none
// here, has none of it.
func localInfo(l *list, j Job, mine []int, index map[int]int) {
	l.u32(C.PMIX_LOCAL_SIZE, uint32(len(mine)))
	l.u32(C.PMIX_NODE_SIZE, uint32(len(mine)))
	l.str(C.PMIX_LOCAL_PEERS, joinInts(mine))
	l.rank(C.PMIX_LOCALLDR, uint32(mine[0]))
	l.u32(C.PMIX_NODEID, uint32(index[j.Node]))
	l.str(C.PMIX_HOSTNAME, j.Hosts[j.Node])
}

// appInfo is one program's entry (the library wants its number first):
// Open MPI's MPI_APPNUM and the app's size and leader come from here and
// from each rank's entry.
func appInfo(a App) *list {
	p := newList()
	p.u32(C.PMIX_APPNUM, uint32(a.Num))
	p.u32(C.PMIX_APP_SIZE, uint32(a.Size))
	p.rank(C.PMIX_APPLDR, uint32(a.First))
	return p
}

// procInfo is one rank's entry: its program, where it is and its place
// (local) in its node.
func procInfo(j Job, r int, app App, nodeID, local int) *list {
	p := newList()
	p.rank(C.PMIX_RANK, uint32(r))
	p.u32(C.PMIX_APPNUM, uint32(app.Num))
	if app.Num > 0 || app.Size < len(j.RankNode) { // MPMD
		p.rank(C.PMIX_APPLDR, uint32(app.First))
	}
	p.u32(C.PMIX_GLOBAL_RANK, uint32(r))
	p.u32(C.PMIX_APP_RANK, uint32(r-app.First))
	p.str(C.PMIX_HOSTNAME, j.Hosts[j.RankNode[r]])
	p.u32(C.PMIX_NODEID, uint32(nodeID))
	p.u16(C.PMIX_LOCAL_RANK, uint16(local))
	p.u16(C.PMIX_NODE_RANK, uint16(local))
	return p
}

// jobNodes lists the nodes that hold ranks, in node id order, and each
// one's index in that list (the node ids the library sees).
func jobNodes(j Job) ([]int, map[int]int) {
	index := map[int]int{}
	var nodes []int
	seen := map[int]bool{}
	for _, n := range j.RankNode {
		seen[n] = true
	}
	for n := range j.Hosts {
		if seen[n] {
			index[n] = len(nodes)
			nodes = append(nodes, n)
		}
	}
	return nodes, index
}

func nodeNames(j Job, nodes []int) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = j.Hosts[n]
	}
	return strings.Join(names, ",")
}

// procMap is the library's ranks-per-node input: "0,1;2,3".
func procMap(j Job, nodes []int) string {
	per := map[int][]int{}
	for r, n := range j.RankNode {
		per[n] = append(per[n], r)
	}
	fields := make([]string, len(nodes))
	for i, n := range nodes {
		fields[i] = joinInts(per[n])
	}
	return strings.Join(fields, ";")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// list builds an info list on the C side; the first error sticks.
type list struct {
	ptr unsafe.Pointer
	err error
}

func newList() *list { return &list{ptr: C.prsh_list()} }

// add calls one of the C adders with key as a C string.
func (l *list) add(key string, adder func(ckey *C.char) C.int) {
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	if rc := adder(ckey); rc != C.PMIX_SUCCESS && l.err == nil {
		l.err = status("info "+key, rc)
	}
}

func (l *list) str(key, v string) {
	cv := C.CString(v)
	defer C.free(unsafe.Pointer(cv))
	l.add(key, func(k *C.char) C.int { return C.prsh_add_string(l.ptr, k, cv) })
}

func (l *list) u32(key string, v uint32) {
	l.add(key, func(k *C.char) C.int { return C.prsh_add_uint32(l.ptr, k, C.uint32_t(v)) })
}

func (l *list) u16(key string, v uint16) {
	l.add(key, func(k *C.char) C.int { return C.prsh_add_uint16(l.ptr, k, C.uint16_t(v)) })
}

func (l *list) rank(key string, v uint32) {
	l.add(key, func(k *C.char) C.int { return C.prsh_add_rank(l.ptr, k, C.uint32_t(v)) })
}

func (l *list) flag(key string, v bool) {
	b := C.int(0)
	if v {
		b = 1
	}
	l.add(key, func(k *C.char) C.int { return C.prsh_add_bool(l.ptr, k, b) })
}

// sub adds s as an array under key; s is consumed.
func (l *list) sub(key string, s *list) {
	if s.err != nil && l.err == nil {
		l.err = s.err
	}
	l.add(key, func(k *C.char) C.int { return C.prsh_add_list(l.ptr, k, s.ptr) })
}

func (l *list) nodeMap(names string) {
	cv := C.CString(names)
	defer C.free(unsafe.Pointer(cv))
	l.add(C.PMIX_NODE_MAP, func(*C.char) C.int { return C.prsh_add_node_map(l.ptr, cv) })
}

func (l *list) procMap(ranks string) {
	cv := C.CString(ranks)
	defer C.free(unsafe.Pointer(cv))
	l.add(C.PMIX_PROC_MAP, func(*C.char) C.int { return C.prsh_add_proc_map(l.ptr, cv) })
}

// The upcalls: the library's threads queue them and return at once;
// deliver hands them to the Handler in order.

type upcalls struct {
	mu     sync.Mutex
	queue  []func(Handler)
	wake   chan struct{}
	closed bool
}

func (u *upcalls) push(f func(Handler)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.queue = append(u.queue, f)
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

func (u *upcalls) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	close(u.wake)
}

func (u *upcalls) deliver() {
	for range u.wake {
		u.mu.Lock()
		batch := u.queue
		u.queue = nil
		u.mu.Unlock()
		s := active.Load()
		for _, f := range batch {
			f(s.handler)
		}
	}
}

func upcall(f func(Handler)) {
	if s := active.Load(); s != nil {
		s.queue.push(f)
	}
}

//export prshConnected
func prshConnected(ns *C.char, rank C.uint32_t) {
	p := proc(ns, rank)
	if s := active.Load(); s != nil {
		s.clients.connected(p)
	}
	upcall(func(h Handler) { h.Connected(p) })
}

// prshFinalized queues the finalize before the client's last word is
// in: Settle, once that is in, waits for the queue.
//
//export prshFinalized
func prshFinalized(ns *C.char, rank C.uint32_t) {
	p := proc(ns, rank)
	upcall(func(h Handler) { h.Finalized(p) })
	clientEnded(p)
}

//export prshLost
func prshLost(ns *C.char, rank C.uint32_t) { clientEnded(proc(ns, rank)) }

func clientEnded(p Proc) {
	if s := active.Load(); s != nil {
		s.clients.ended(p)
	}
}

//export prshAborted
func prshAborted(ns *C.char, rank C.uint32_t, st C.int, msg *C.char) {
	p, m := proc(ns, rank), C.GoString(msg)
	upcall(func(h Handler) { h.Aborted(p, int(st), m) })
}

//export prshFence
func prshFence(procs *C.pmix_proc_t, nprocs C.size_t, data *C.char, n C.size_t, collect, timeout C.int, call *C.prsh_call_t) {
	f := Fence{Data: C.GoBytes(unsafe.Pointer(data), C.int(n)), Collect: collect != 0,
		Timeout: time.Duration(timeout) * time.Second, Reply: &Reply{call: call}}
	ps := procsOf(procs, nprocs)
	if !oneNamespace(ps) {
		f.Procs = ps
	} else {
		f.Namespace = ps[0].Namespace
		f.Ranks = groupOf(ps)
	}
	upcall(func(h Handler) { h.Fence(f) })
}

//export prshDirectModex
func prshDirectModex(ns *C.char, rank C.uint32_t, call *C.prsh_call_t) {
	p, r := proc(ns, rank), &Reply{call: call}
	upcall(func(h Handler) { h.DirectModex(p, r) })
}

// proc copies the library's name of a process.
func proc(ns *C.char, rank C.uint32_t) Proc {
	if rank == C.PMIX_RANK_WILDCARD {
		return Proc{Namespace: C.GoString(ns), Rank: Wildcard}
	}
	return Proc{Namespace: C.GoString(ns), Rank: int(rank)}
}

//export prshDmodexDone
func prshDmodexDone(st C.int, data *C.char, n C.size_t, handle C.uintptr_t) {
	h := cgo.Handle(handle)
	answer := h.Value().(func([]byte, error))
	h.Delete()
	b := C.GoBytes(unsafe.Pointer(data), C.int(n))
	var err error
	if st != C.PMIX_SUCCESS {
		err = fmt.Errorf("pmix: %s", C.GoString(C.prsh_error_string(st)))
	}
	upcall(func(Handler) { answer(b, err) })
}

// groupOf is the ranks a fence over one namespace lists, sorted, each
// once (the library passes them in the order the ranks gave them); nil
// when one is the wildcard: the whole namespace.
func groupOf(procs []Proc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		if p.Rank == Wildcard {
			return nil
		}
		out[i] = p.Rank
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// oneNamespace says whether every process is of the first's namespace.
func oneNamespace(procs []Proc) bool {
	for _, p := range procs {
		if p.Namespace != procs[0].Namespace {
			return false
		}
	}
	return true
}
