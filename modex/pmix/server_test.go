//go:build pmix

package pmix

import (
	"debug/elf"
	"os"
	"slices"
	"strings"
	"testing"
)

type nothing struct{}

func (nothing) Connected(int)               {}
func (nothing) Finalized(int)               {}
func (nothing) Aborted(int, int, string)    {}
func (nothing) Fence(f Fence)               { f.Reply.Send(nil, ErrFailed) }
func (nothing) DirectModex(_ int, r *Reply) { r.Send(nil, ErrNotFound) }

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
	s, err := Start(t.TempDir(), "n1", nothing{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Start(t.TempDir(), "n1", nothing{}); err == nil {
		t.Error("a second server started")
	}
	j := Job{Namespace: "prsh-test", Hosts: []string{"head", "n1", "n2"}, RankNode: []int{1, 2, 1}, Node: 1, AppFirst: []int{0, 2}}
	if err := s.RegisterJob(j); err != nil {
		t.Fatal(err)
	}
	env, err := s.Client(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PMIX_NAMESPACE=prsh-test", "PMIX_RANK=2", "PMIX_HOSTNAME=n1"} {
		if !slices.Contains(env, want) {
			t.Errorf("client env lacks %s: %q", want, env)
		}
	}
	s.Sync(0)
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
