package main

import (
	"bytes"
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

// BenchmarkLaunch measures the paper's /bin/true benchmark on the testbed:
// 256 nodes, 20 ms of emulated ssh latency per session, for several spawn
// degrees. It reports wall time per launch and the CPU seconds used by
// mpirun, the orteds and the ranks (the testbed's own ssh servers run in
// the benchmark process and are not counted).
//
//	go test -run '^$' -bench Launch -benchtime 5x ./cmd/mpirun
func BenchmarkLaunch(b *testing.B) {
	nodes := 256
	c, err := testbed.Start(testbed.Config{Nodes: nodes, SSHLatency: 20 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, degree := range []int{2, 8, 32, 256} {
		b.Run(fmt.Sprintf("nodes=%d/degree=%d", nodes, degree), func(b *testing.B) {
			cpu := childCPU()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(filepath.Join(bin, "mpirun"), "--spawn-degree", fmt.Sprint(degree), "/bin/true")
				cmd.Env = append(os.Environ(), c.Env()...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			b.ReportMetric((childCPU()-cpu).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// childCPU is the user+system time of reaped children and their reaped
// descendants.
func childCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOutput measures output throughput through a 3-level spawn tree
// (14 nodes, δ = 2) to mpirun's stdout, which goes to /dev/null: MB/s at
// mpirun's stdout and mpirun's CPU seconds per GB, for 1, 16 and 64 ranks
// writing 1 GB between them. PRSH_BENCH_BINS=name=dir,… runs the mpirun
// and orted of each dir instead of this build's, in turn for every rank
// count, so that a shared machine's load falls on all alike.
//
//	go test -run '^$' -bench Output -benchtime 3x ./cmd/mpirun
//	make bin && PRSH_BENCH_BINS=this=$PWD/bin,main=/tmp/main go test -run '^$' -bench Output -benchtime 1x ./cmd/mpirun
func BenchmarkOutput(b *testing.B) {
	c, err := testbed.Start(testbed.Config{Nodes: 14, Slots: 5})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer devnull.Close()
	const total = 1 << 30
	builds := benchBuilds(b)
	for _, ranks := range []int{1, 16, 64} {
		for _, build := range builds {
			b.Run(fmt.Sprintf("ranks=%d%s", ranks, build.suffix), func(b *testing.B) {
				per := fmt.Sprint(total / ranks)
				var cpu time.Duration
				b.SetBytes(total)
				for i := 0; i < b.N; i++ {
					cmd := exec.Command(filepath.Join(build.dir, "mpirun"), "--spawn-degree", "2", "--map-by", "node", "-np", fmt.Sprint(ranks),
						"sh", "-c", "head -c "+per+" /dev/zero")
					cmd.Env = append(os.Environ(), c.Env()...)
					var stderr bytes.Buffer
					cmd.Stdout, cmd.Stderr = devnull, &stderr
					if err := cmd.Run(); err != nil {
						b.Fatalf("%v: %s", err, stderr.Bytes())
					}
					cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}
				b.ReportMetric(cpu.Seconds()/float64(b.N)/(total/1e9), "mpirun-cpu-s/GB")
			})
		}
	}
}

// benchBuild is a directory holding mpirun and orted, and what its
// benchmarks' names end with.
type benchBuild struct{ suffix, dir string }

// benchBuilds are those PRSH_BENCH_BINS names, or else this build.
func benchBuilds(b *testing.B) []benchBuild {
	spec := os.Getenv("PRSH_BENCH_BINS")
	if spec == "" {
		return []benchBuild{{"", bin}}
	}
	var builds []benchBuild
	for _, nameDir := range strings.Split(spec, ",") {
		name, dir, ok := strings.Cut(nameDir, "=")
		if !ok || name == "" || dir == "" {
			b.Fatalf("PRSH_BENCH_BINS: %q is not name=dir", nameDir)
		}
		builds = append(builds, benchBuild{"/bin=" + name, dir})
	}
	return builds
}

// BenchmarkStaging runs a 64 MB program on 64 nodes (one rank each, spawn
// degree 8), each rank reading the whole of its program as a loader
// would: from the one file every node shares ("shared"), or from the
// node's own copy that --preload-binary sent down the spawn tree into its
// TMPDIR, on /dev/shm here ("preload"). It reports wall time per job and
// the CPU seconds of mpirun, the orteds and the ranks. On one machine the
// shared file is in the page cache, so this measures what staging costs,
// not the shared file system's contention that it removes.
//
//	go test -tags pmix -run '^$' -bench Staging -benchtime 3x ./cmd/mpirun
func BenchmarkStaging(b *testing.B) {
	const nodes, size = 64, 64 << 20
	prog := filepath.Join(b.TempDir(), "big")
	head := "#!/bin/sh\ncat \"$0\" > /dev/null\nexit\n"
	f, err := os.OpenFile(prog, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		f.WriteString(head)
		_, err = f.Write(bytes.Repeat([]byte("#"), size-len(head)))
		f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	path, err := plainBin()
	if err != nil {
		b.Fatal(err)
	}
	c, err := testbed.Start(testbed.Config{Nodes: nodes, Env: []string{"TMPDIR=/dev/shm"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, mode := range []string{"shared", "preload"} {
		b.Run(fmt.Sprintf("nodes=%d/MB=%d/%s", nodes, size>>20, mode), func(b *testing.B) {
			args := []string{"--spawn-degree", "8", "--ssh-connect-timeout", "60s", prog}
			if mode == "preload" {
				args = append([]string{"--preload-binary"}, args...)
			}
			cpu := childCPU()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(filepath.Join(path, "mpirun"), args...)
				cmd.Env = append(os.Environ(), c.Env()...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			b.ReportMetric((childCPU()-cpu).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
