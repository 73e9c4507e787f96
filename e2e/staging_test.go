package e2e

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// launchOnly starts a cluster whose nodes cannot see a directory that
// the launch node (the test, and mpirun) can, each with a TMPDIR of its
// own, and returns the directory. Hiding needs a mount namespace: root.
func launchOnly(t *testing.T, nodes, slots int) (*testbed.Cluster, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("hiding a directory from the nodes needs root (a mount namespace)")
	}
	dir := t.TempDir()
	c := cluster(t, testbed.Config{Nodes: nodes, Slots: slots, Hide: []string{dir}, NodeTmp: true})
	t.Cleanup(func() {
		if left := c.NodeTmpFiles("prsh-stage-"); len(left) > 0 {
			t.Errorf("stage directories left behind: %v", left)
		}
	})
	return c, dir
}

// script writes an executable shell script; pad adds that many bytes of
// comment, to make it span many chunks.
func script(t *testing.T, path, body string, pad int) []byte {
	t.Helper()
	text := "#!/bin/sh\n" + body + "\nexit\n" + "#" + strings.Repeat("x", pad) + "\n"
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return []byte(text)
}

// A program only the launch node has runs on every node with
// --preload-binary, from a whole copy in the node's own TMPDIR, through
// a spawn tree of several levels; without it, it cannot start.
func TestPreloadBinary(t *testing.T) {
	c, dir := launchOnly(t, 8, 2)
	prog := filepath.Join(dir, "prog")
	// Over 3 MB: many chunks, pipelined down a tree of depth 3.
	text := script(t, prog, `echo "rank $PRSH_RANK on $PRSH_NODE ran $0 sum $(sha256sum < "$0" | cut -d' ' -f1) tmp $TMPDIR"`, 3<<20)
	sum := fmt.Sprintf("%x", sha256.Sum256(text))
	res := mpirun(t, c, "--spawn-degree", "2", "-np", "16", "--preload-binary", prog)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	got := lines(res.stdout)
	if len(got) != 16 {
		t.Fatalf("%d lines, want 16:\n%s", len(got), res.stdout)
	}
	for _, line := range got {
		var rank int
		var node, ran, gotSum, tmp string
		if _, err := fmt.Sscanf(line, "rank %d on %s ran %s sum %s tmp %s", &rank, &node, &ran, &gotSum, &tmp); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if tmp != c.NodeTmpDir(node) || !strings.HasPrefix(ran, tmp+"/prsh-stage-") {
			t.Errorf("rank %d on %s ran %s, want a copy under its node's TMPDIR %s", rank, node, ran, c.NodeTmpDir(node))
		}
		if gotSum != sum {
			t.Errorf("rank %d on %s: the copy's SHA-256 is %s, want %s", rank, node, gotSum, sum)
		}
	}
	res = mpirun(t, c, "--spawn-degree", "2", "-np", "16", prog)
	if res.status != 127 || !strings.Contains(res.stderr, "cannot run "+prog) {
		t.Fatalf("without --preload-binary: exit %d, want 127 naming %s; stderr:\n%s", res.status, prog, res.stderr)
	}
}

// A program missing on the launch node is refused before anything
// starts, naming the launch node and the file; a directory is not a
// program.
func TestPreloadBinaryMissing(t *testing.T) {
	c, dir := launchOnly(t, 2, 1)
	self, _ := os.Hostname()
	res := mpirun(t, c, "--preload-binary", filepath.Join(dir, "nothing"))
	checkOneLine(t, res.stderr, "^mpirun: "+self+": --preload-binary: "+filepath.Join(dir, "nothing")+": no such file on the launch node$")
	if res.status != 127 {
		t.Errorf("exit %d, want 127", res.status)
	}
	res = mpirun(t, c, "-s", dir)
	checkOneLine(t, res.stderr, "^mpirun: "+self+": --preload-binary: "+dir+": not a regular file$")
	if res.status != 126 {
		t.Errorf("exit %d, want 126", res.status)
	}
}

// A staged program that fails ends the job with its status, and its
// copies are gone all the same (launchOnly checks).
func TestPreloadBinaryFailedJob(t *testing.T) {
	c, dir := launchOnly(t, 4, 1)
	prog := filepath.Join(dir, "fail")
	script(t, prog, `[ "$PRSH_RANK" = 2 ] && exit 3; exec sleep 1000`, 0)
	res := mpirun(t, c, "--spawn-degree", "2", "--preload-binary", prog)
	if res.status != 3 {
		t.Errorf("exit %d, want 3; stderr:\n%s", res.status, res.stderr)
	}
}

// Ctrl-C while staged ranks run stops them, and so does mpirun's death
// (the orteds lose their lifeline); either way the copies are removed
// (launchOnly checks).
func TestPreloadBinaryStopped(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			c, dir := launchOnly(t, 4, 1)
			prog := filepath.Join(dir, "wait")
			script(t, prog, `touch "$MARKS/$PRSH_RANK"; exec sleep 1000`, 0)
			cmd, stderr, _ := started(t, c, 4, "--spawn-degree", "2", "--preload-binary", prog)
			if left := c.NodeTmpFiles("prsh-stage-"); len(left) != 4 {
				t.Errorf("while running, stage directories %v, want one on each of 4 nodes", left)
			}
			cmd.Process.Signal(sig)
			if status := waitExit(t, cmd); sig == syscall.SIGINT && status != 130 {
				t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
			}
			if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
				t.Fatalf("left running after %v: %+v", sig, left)
			}
		})
	}
}

// --preload-libs stages the shared library a program needs from where
// the launch node finds it; with --preload-binary alone the nodes, which
// cannot see it, fail to load the program.
func TestPreloadLibs(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	c, dir := launchOnly(t, 4, 1)
	libDir := filepath.Join(dir, "lib")
	os.Mkdir(libDir, 0o755)
	lib := `const char *greeting(void) { return "hello from libgreet"; }`
	prog := `#include <stdio.h>
const char *greeting(void);
int main(void) { puts(greeting()); return 0; }`
	os.WriteFile(filepath.Join(dir, "greet.c"), []byte(lib), 0o644)
	os.WriteFile(filepath.Join(dir, "main.c"), []byte(prog), 0o644)
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-Wl,-soname,libgreet.so.1", "-o", filepath.Join(libDir, "libgreet.so.1"), filepath.Join(dir, "greet.c")},
		{"-o", filepath.Join(dir, "greet"), filepath.Join(dir, "main.c"), filepath.Join(libDir, "libgreet.so.1")},
	} {
		if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v\n%s", args, err, out)
		}
	}
	t.Setenv("LD_LIBRARY_PATH", libDir) // the launch node finds it here
	res := mpirun(t, c, "--spawn-degree", "2", "--preload-libs", filepath.Join(dir, "greet"))
	if res.status != 0 || res.stdout != strings.Repeat("hello from libgreet\n", 4) {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", res.status, res.stdout, res.stderr)
	}
	res = mpirun(t, c, "--spawn-degree", "2", "--preload-binary", filepath.Join(dir, "greet"))
	if res.status != 127 || !strings.Contains(res.stderr, "libgreet.so.1") {
		t.Fatalf("without the library: exit %d, want 127 naming libgreet.so.1; stderr:\n%s", res.status, res.stderr)
	}
}
