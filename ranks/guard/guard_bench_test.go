package guard

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkGuard measures what a guard adds to a rank's start, in CPU:
// /bin/true run under cmd/prsh-guard as orted runs it, against /bin/true
// alone. It reports the children's CPU per rank (user plus system).
func BenchmarkGuard(b *testing.B) {
	dir := b.TempDir()
	build := exec.Command("go", "build", "-o", dir, "prsh/cmd/prsh-guard")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, GuardBinary)
	b.Run("alone", func(b *testing.B) {
		cpu := childCPU(b, func() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(cpu, "cpu-ms/op")
	})
	b.Run("guarded", func(b *testing.B) {
		saved := guardBinary
		guardBinary = func() (string, error) { return bin, nil }
		defer func() { guardBinary = saved }()
		cpu := childCPU(b, func() {
			g, err := GuardCommand(exec.Command("/bin/true"), time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Start(); err != nil {
				b.Fatal(err)
			}
			if ws := g.Wait(); ws.ExitStatus() != 0 {
				b.Fatalf("status %v", ws)
			}
			g.End()
			g.Reap()
		})
		b.ReportMetric(cpu, "cpu-ms/op")
	})
}

// childCPU runs f b.N times and returns the CPU of the children it
// reaped, in ms per run.
func childCPU(b *testing.B, f func()) float64 {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	b.ResetTimer()
	for range b.N {
		f()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	used := func(r syscall.Rusage) float64 {
		return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e6
	}
	return (used(after) - used(before)) / float64(b.N)
}
