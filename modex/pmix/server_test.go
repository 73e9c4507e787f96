//go:build pmix

package pmix

import (
	"debug/elf"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type nothing struct{}

func (nothing) Connected(Proc)               {}
func (nothing) Finalized(Proc)               {}
func (nothing) Aborted(Proc, int, string)    {}
func (nothing) Fence(f Fence)                { f.Reply.Send(nil, ErrFailed) }
func (nothing) DirectModex(_ Proc, r *Reply) { r.Send(nil, ErrNotFound) }
func (nothing) Publish(p Publish)            { p.Reply.Send(nil, ErrFailed) }
func (nothing) Lookup(l Lookup)              { l.Reply.Send(nil, ErrNotFound) }
func (nothing) Unpublish(u Unpublish)        { u.Reply.Send(nil, ErrNotFound) }
func (nothing) Connect(c Connect)            { c.Reply.Send(nil, ErrFailed) }

// TestMaps: the node list holds the nodes with ranks (and this one), in
// node id order; the proc map lists each one's ranks.
func TestMaps(t *testing.T) {
	j := Job{Hosts: []string{"head", "n1", "n2", "n3"}, RankNode: []int{2, 1, 2, 1, 3}, Node: 1}
	nodes, index := jobNodes(j)
	if !slices.Equal(nodes, []int{1, 2, 3}) || index[1] != 0 || index[3] != 2 {
		t.Errorf("nodes %v index %v", nodes, index)
	}
	if got := nodeNames(j, nodes); got != "n1,n2,n3" {
		t.Errorf("node names %q", got)
	}
	if got := procMap(j, nodes); got != "1,3;0,2;4" {
		t.Errorf("proc map %q", got)
	}
	if got := localRanks(j); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("local ranks %v", got)
	}
}

// TestServer: the library starts, takes a job of two nodes, and gives a
// local rank the environment its client needs; a second server in the
// same process is refused.
func TestServer(t *testing.T) {
	serverDir := t.TempDir()
	s, err := Start(serverDir, "n1", true, DefaultSegments, nothing{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Start(t.TempDir(), "n1", true, DefaultSegments, nothing{}); err == nil {
		t.Error("a second server started")
	}
	j := Job{Namespace: "prsh-test", Hosts: []string{"head", "n1", "n2"}, RankNode: []int{1, 2, 1}, Node: 1, AppFirst: []int{0, 2}}
	if err := s.RegisterJob(j); err != nil {
		t.Fatal(err)
	}
	env, err := s.Client("prsh-test", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PMIX_NAMESPACE=prsh-test", "PMIX_RANK=2", "PMIX_HOSTNAME=n1"} {
		if !slices.Contains(env, want) {
			t.Errorf("client env lacks %s: %q", want, env)
		}
	}
	s.Sync(0)
	jobsComeAndGo(t, s, serverDir)
}

// TestApps: an MPMD job's programs, each with its own number, first rank
// and size; the ranks of each.
func TestApps(t *testing.T) {
	one := Job{RankNode: []int{1, 1, 2}}
	if got := one.Apps(); !slices.Equal(got, []App{{0, 0, 3}}) {
		t.Errorf("one program: %v", got)
	}
	three := Job{RankNode: make([]int, 7), AppFirst: []int{0, 1, 3}}
	apps := three.Apps()
	if !slices.Equal(apps, []App{{0, 0, 1}, {1, 1, 2}, {2, 3, 4}}) {
		t.Errorf("three programs: %v", apps)
	}
	for r, want := range []int{0, 1, 1, 2, 2, 2, 2} {
		if got := appOf(apps, r); got.Num != want {
			t.Errorf("rank %d runs app %d, want %d", r, got.Num, want)
		}
	}
}

// TestLibraryLoadedOnDemand: a binary with the server does not link the
// library (its start would map it, and hwloc, libevent, munge and udev
// behind it, in every daemon); only Start loads it.
func TestLibraryLoadedOnDemand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		if strings.HasPrefix(lib, "libpmix") || strings.HasPrefix(lib, "libhwloc") {
			t.Errorf("the binary links %s", lib)
		}
	}
}

// jobsComeAndGo: a server that outlives its jobs (a DVM's) registers
// and deregisters a namespace per job, with a client each, and holds
// after 600 jobs what it held after 20: the same files in its directory
// and descriptors, and its memory mappings and resident memory within a
// bound that the shared-memory store's lock segments (Start) exceed.
func jobsComeAndGo(t *testing.T, s *Server, serverDir string) {
	dir := t.TempDir()
	job := func(i int) {
		ns := "prsh-dvm." + strconv.Itoa(i)
		j := Job{Namespace: ns, Hosts: []string{"head", "n1"}, RankNode: []int{1, 1, 1, 1}, Node: 1, TmpDir: dir}
		if err := s.RegisterJob(j); err != nil {
			t.Fatal(err)
		}
		for r := range 4 {
			if _, err := s.Client(ns, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeregisterJob(ns); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		job(i)
	}
	before := holding(t, serverDir)
	for i := 20; i < 600; i++ {
		job(i)
	}
	after := holding(t, serverDir)
	t.Logf("after 20 jobs: %+v; after 600: %+v", before, after)
	if !slices.Equal(before.files, after.files) || before.fds != after.fds {
		t.Errorf("after 20 jobs: files %v, %d descriptors; after 600: files %v, %d descriptors", before.files, before.fds, after.files, after.fds)
	}
	if after.maps > before.maps+16 || after.rssKiB > before.rssKiB+rssSlackKiB {
		t.Errorf("580 jobs took %d memory mappings and %d KiB more", after.maps-before.maps, after.rssKiB-before.rssKiB)
	}
}

// held is what the process holds of the server.
type held struct {
	files     []string // in its directory
	fds, maps int
	rssKiB    int
}

func holding(t *testing.T, serverDir string) held {
	t.Helper()
	var h held
	entries, _ := os.ReadDir(serverDir)
	for _, e := range entries {
		h.files = append(h.files, e.Name())
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	h.fds = len(fds)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	h.maps = strings.Count(string(maps), "\n")
	debug.FreeOSMemory() // the Go heap's free pages are not the library's
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			h.rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	return h
}
