package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkGuard measures what the node's guard adds to a rank's start,
// in CPU: /bin/true started by cmd/prsh-guard as orted has it started,
// against /bin/true alone. It reports the children's CPU per rank (user
// plus system), the guard's own start and end shared among the ranks.
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
		}, func() {})
		b.ReportMetric(cpu, "cpu-ms/op")
	})
	b.Run("guarded", func(b *testing.B) {
		saved := guardBinary
		guardBinary = func() (string, error) { return bin, nil }
		defer func() { guardBinary = saved }()
		null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer null.Close()
		var g *Guard
		cpu := childCPU(b, func() {
			if g == nil {
				var err error
				if g, err = Start(time.Minute); err != nil {
					b.Fatal(err)
				}
			}
			g.StartRank(RankStart{Path: "/bin/true", Args: []string{"true"}, Dir: "/", Stdout: null, Stderr: null})
			for rep, err := g.Next(); rep.Kind != Exited; rep, err = g.Next() {
				if err != nil || rep.Kind == Failed {
					b.Fatalf("%+v, %v", rep, err)
				}
			}
		}, func() { endGuard(g) })
		b.ReportMetric(cpu, "cpu-ms/op")
	})
}

// childCPU runs f b.N times, then done, and returns the CPU of the
// children reaped, in ms per run.
func childCPU(b *testing.B, f, done func()) float64 {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	b.ResetTimer()
	for range b.N {
		f()
	}
	done()
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	used := func(r syscall.Rusage) float64 {
		return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e6
	}
	return (used(after) - used(before)) / float64(b.N)
}
