package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"prsh/testbed"
)

// rssBound is the most memory mpirun or an orted may hold while 800 MiB of
// output flows through them: flow control, not buffering, moves the data.
// It is measured on builds without the race detector, whose shadow memory
// would say nothing about ours.
const rssBound = 100 << 20

// TestLargeOutput: 4 ranks each write 200 MiB of random bytes; what mpirun
// writes matches each rank's checksum, and memory stays bounded.
func TestLargeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 800 MiB")
	}
	plain, err := plainBin()
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, testbed.Config{Nodes: 4})
	marks, out := t.TempDir(), t.TempDir()
	t.Setenv("MARKS", marks)
	watch := watchRSS(filepath.Join(plain, "orted"))
	watchMpirun := watchRSS(filepath.Join(plain, "mpirun"))
	// The checksum is taken in the rank's own pipeline, not in a process
	// substitution that outlives the rank: when the job ends, the daemons
	// kill what the ranks left behind, and could kill it before it wrote.
	res := mpirunFrom(t, plain, c, "-x", "MARKS", "--spawn-degree", "1", "--output-filename", out, "bash", "-c",
		`{ head -c 209715200 /dev/urandom | tee /dev/fd/3 | sha256sum | cut -d' ' -f1 > "$MARKS/$PRSH_RANK"; } 3>&1`)
	ortedPeak, mpirunPeak := watch(), watchMpirun()
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	for r := 0; r < 4; r++ {
		want := waitFile(t, filepath.Join(marks, fmt.Sprint(r)))
		got := fileSum(t, filepath.Join(out, "1", fmt.Sprintf("rank.%d", r), "stdout"))
		if got != want {
			t.Errorf("rank %d: mpirun wrote bytes with sha256 %s, the rank wrote %s", r, got, want)
		}
	}
	if mpirunPeak > rssBound {
		t.Errorf("mpirun peaked at %d MiB, bound %d MiB", mpirunPeak>>20, rssBound>>20)
	}
	if ortedPeak > rssBound {
		t.Errorf("an orted peaked at %d MiB, bound %d MiB", ortedPeak>>20, rssBound>>20)
	}
	t.Logf("peak RSS: mpirun %d MiB, orted %d MiB", mpirunPeak>>20, ortedPeak>>20)
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// watchRSS samples the peak resident memory (VmHWM) of every process whose
// argv[0] is exe until the returned function is called, which returns the
// largest peak seen. (The ru_maxrss a parent gets from wait4 is no use
// here: Linux carries the high-water mark across exec, and Go forks by
// sharing the parent's memory, so it would report the test process.)
func watchRSS(exe string) func() int64 {
	var mu sync.Mutex
	var peak int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, hwm := range peaksOf(exe) {
				mu.Lock()
				peak = max(peak, hwm)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

func peaksOf(exe string) []int64 {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var peaks []int64
	for _, d := range dirs {
		cmdline, err := os.ReadFile(d + "/cmdline")
		// orted is orted-pmix in a job that boots a PMIx server.
		if err != nil || !strings.HasPrefix(string(cmdline), exe+"\x00") && !strings.HasPrefix(string(cmdline), exe+pmixSuffix+"\x00") {
			continue
		}
		status, err := os.ReadFile(d + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
				peaks = append(peaks, kb<<10)
			}
		}
	}
	return peaks
}
