package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"prsh/testbed"
)

// TestBigFence: one PMI fence carries 32 ranks' 64 KiB of puts each: a
// 2 MiB FenceDown, and FenceUps of 512 KiB and more, all far over the
// 64 KiB that goes inline, so every daemon passes them on its links' bulk
// streams. Every rank then checks every value (32² × 64 gets: they, not
// the fence, take most of the time, hence no more ranks).
func TestBigFence(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "bigfence")
	if out, err := exec.Command("go", "build", "-o", prog, "./testdata/bigfence").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const ranks, keys = 32, 64
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 8})
	res := mpirun(t, c, "-np", itoa(ranks), "--spawn-degree", "2", prog, itoa(keys))
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range ranks {
		want = append(want, fmt.Sprintf("rank %d of %d: %d values ok", r, ranks, ranks*keys))
	}
	checkLines(t, res.stdout, want)
}
