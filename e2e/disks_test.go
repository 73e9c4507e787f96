package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"prsh/testbed"
)

// A full local disk: the node's TMPDIR (the testbed's NodeTmp) is a
// small tmpfs of its own for one test. full fills it, blocks and inodes
// both, so that nothing can be made there, not even a directory; a tight
// one has room for directories and small files, not for megabytes.
type tmpdirState int

const (
	full tmpdirState = iota
	tight
)

// fillTmpdir mounts a small tmpfs over the node's TMPDIR, filled as
// state says, and unmounts it when the test ends.
func fillTmpdir(t *testing.T, c *testbed.Cluster, node string, state tmpdirState) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full TMPDIR is a tmpfs mounted over the node's: root")
	}
	dir := c.NodeTmpDir(node)
	opts := "size=1m,mode=1777"
	if state == full {
		opts = "size=64k,nr_inodes=8,mode=1777"
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if state == full {
		fill(t, dir)
	}
	return dir
}

// fill writes files into dir until it has no room for another.
func fill(t *testing.T, dir string) {
	t.Helper()
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprint("fill", i)))
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Write(make([]byte, 32<<10))
		f.Close()
		if err != nil && !errors.Is(err, syscall.ENOSPC) {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "probe"), 0o700); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a directory in the full TMPDIR: %v, want ENOSPC", err)
	}
}

// checkTmpdirClean fails the test if the job left anything of its own in
// the node's TMPDIR (what fill wrote is not the job's; the topology
// cache is kept for the next job on purpose).
func checkTmpdirClean(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !regexp.MustCompile(`^(fill\d+|prsh-topology-\d+)$`).MatchString(e.Name()) {
			t.Errorf("left in %s: %s", dir, e.Name())
		}
	}
}

// TestTmpdirFullNotNeeded: a plain job and an MPICH program (PMI) run on
// a node whose TMPDIR is full: neither the daemons nor the PMI service
// write anything there, so the disk is no reason to fail.
func TestTmpdirFullNotNeeded(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, NodeTmp: true})
	dir := fillTmpdir(t, c, "node002", full)
	res := mpirun(t, c, "-np", "6", "sh", "-c", `echo "rank $PRSH_RANK"`)
	if res.status != 0 || res.stderr != "" || len(lines(res.stdout)) != 6 {
		t.Errorf("plain job: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	res = mpirun(t, c, "-np", "6", hello)
	if res.status != 0 || res.stderr != "" || len(lines(res.stdout)) != 6 {
		t.Errorf("MPICH: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkTmpdirClean(t, dir)
}

// TestTmpdirFullOpenMPI: an Open MPI program (PMIx) on a node whose
// TMPDIR cannot hold the PMIx server's directory, or its shared-memory
// store, fails with one line of mpirun's naming the node and the cause
// (the ranks there may add Open MPI's own, as wherever their server is
// missing); before, the PMIx library's lines were all a user got, and
// its server thread could deadlock on its store and keep the orted
// running. Nothing is left running, nor in the TMPDIR.
func TestTmpdirFullOpenMPI(t *testing.T) {
	where := openMPI(t, "where")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, NodeTmp: true, UTS: true})
	cases := []struct {
		state tmpdirState
		why   string
	}{
		{full, `cannot make the PMIx server's directory in \S+/node002: no space left on device`},
		{tight, `no room for its shared-memory store \(1296 KiB\) in \S+/node002: no space left on device`},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.state), func(t *testing.T) {
			dir := fillTmpdir(t, c, "node002", tc.state)
			res := mpirun(t, c, "-np", "6", where)
			if res.status != 255 {
				t.Errorf("exit %d, want 255", res.status)
			}
			checkMpirunLine(t, res.stderr, `^mpirun: node002: rank [23] cannot start: it speaks PMIx \(Open MPI\), but the PMIx server of its node did not start: `+tc.why+`$`)
			checkTmpdirClean(t, dir)
		})
	}
}

// TestTmpdirFullPreloadBinary: --preload-binary to a node whose TMPDIR
// cannot hold the stage directory, or the program, fails in one line
// naming the node and the cause; nothing is left running, nor in the
// TMPDIR.
func TestTmpdirFullPreloadBinary(t *testing.T) {
	c, launch := launchOnly(t, 3, 2)
	prog := filepath.Join(launch, "prog")
	script(t, prog, `echo "rank $PRSH_RANK"`, 3<<20)
	cases := []struct {
		state tmpdirState
		why   string
	}{
		{full, `cannot make the stage directory in \S+/node002: no space left on device`},
		{tight, `cannot stage ` + regexp.QuoteMeta(prog) + `: write \S+/node002/prsh-stage-[^/]+/0/prog: no space left on device`},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.state), func(t *testing.T) {
			dir := fillTmpdir(t, c, "node002", tc.state)
			res := mpirun(t, c, "-np", "6", "--preload-binary", prog)
			if res.status != 255 {
				t.Errorf("exit %d, want 255", res.status)
			}
			checkOneLine(t, res.stderr, `^mpirun: node002: --preload-binary: `+tc.why+`$`)
			checkTmpdirClean(t, dir)
		})
	}
}

func (s tmpdirState) String() string { return [...]string{"full", "tight"}[s] }
