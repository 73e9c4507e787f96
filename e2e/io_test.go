package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"prsh/testbed"
)

// TestEveryLineArrives: 64 ranks on 16 nodes print 10,000 numbered lines
// to stdout and 1,000 to stderr; every line arrives once, in order per
// rank, on the right stream, and with --tag-output carries the right rank.
func TestEveryLineArrives(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 16, Slots: 4})
	script := `i=0; while [ $i -lt 10000 ]; do echo "out $PRSH_RANK $i"; i=$((i+1)); done
i=0; while [ $i -lt 1000 ]; do echo "err $PRSH_RANK $i" >&2; i=$((i+1)); done`
	for _, tag := range []bool{false, true} {
		t.Run(fmt.Sprintf("tag=%v", tag), func(t *testing.T) {
			args := []string{"-np", "64", "--spawn-degree", "3"}
			if tag {
				args = append(args, "--tag-output")
			}
			res := mpirun(t, c, append(args, "sh", "-c", script)...)
			if res.status != 0 {
				t.Fatalf("exit %d; mpirun said:\n%s", res.status, mpirunLines(res.stderr))
			}
			checkNumbered(t, res.stdout, "out", "stdout", 64, 10000, tag)
			checkNumbered(t, res.stderr, "err", "stderr", 64, 1000, tag)
		})
	}
}

// checkNumbered checks "word rank i" lines: for every rank, 0..count-1 in
// order, each once; with tags, the tag names the same rank and stream.
func checkNumbered(t *testing.T, text, word, stream string, ranks, count int, tagged bool) {
	t.Helper()
	next := make([]int, ranks)
	tag := regexp.MustCompile(`^\[1,(\d+)\]<(\w+)>:(.*)$`)
	for _, line := range lines(text) {
		var tagRank int
		if tagged {
			m := tag.FindStringSubmatch(line)
			if m == nil || m[2] != stream {
				t.Fatalf("untagged or mistagged line %q", line)
			}
			fmt.Sscan(m[1], &tagRank)
			line = m[3]
		}
		var w string
		var r, i int
		if _, err := fmt.Sscan(line, &w, &r, &i); err != nil || w != word || r < 0 || r >= ranks {
			t.Fatalf("garbled line %q", line)
		}
		if tagged && tagRank != r {
			t.Fatalf("line %q tagged with rank %d", line, tagRank)
		}
		if i != next[r] {
			t.Fatalf("rank %d: line %d after line %d", r, i, next[r]-1)
		}
		next[r]++
	}
	for r, n := range next {
		if n != count {
			t.Fatalf("rank %d: %d of %d %s lines arrived", r, n, count, stream)
		}
	}
}

// TestOutputBeforeExitIsKept: what a rank writes just before exiting, or
// before the job is aborted by another rank's failure, is all delivered.
func TestOutputBeforeExitIsKept(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4})
	res := mpirun(t, c, "sh", "-c", `head -c 300000 /dev/zero | tr '\0' x; echo; echo last $PRSH_RANK`)
	if res.status != 0 || strings.Count(res.stdout, "last") != 4 || strings.Count(res.stdout, "x") != 4*300000 {
		t.Fatalf("exit %d; %d bytes of x, %d last lines", res.status, strings.Count(res.stdout, "x"), strings.Count(res.stdout, "last"))
	}
	// Rank 3 fails once every rank has written its line.
	marks := t.TempDir()
	t.Setenv("MARKS", marks)
	res = mpirun(t, c, "-x", "MARKS", "sh", "-c", `echo "before $PRSH_RANK"; touch "$MARKS/$PRSH_RANK"
if [ "$PRSH_RANK" = 3 ]; then while [ $(ls "$MARKS" | wc -l) -lt 4 ]; do sleep 0.05; done; exit 9; fi; sleep 30`)
	if res.status != 9 {
		t.Fatalf("exit %d, want 9", res.status)
	}
	for r := 0; r < 4; r++ {
		if !strings.Contains(res.stdout, fmt.Sprintf("before %d\n", r)) {
			t.Errorf("rank %d's output before the abort is missing:\n%s", r, res.stdout)
		}
	}
}

func TestOutputFlags(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	cmd := []string{"sh", "-c", `echo "o$PRSH_RANK"; echo "e$PRSH_RANK" >&2`}
	t.Run("prepend-rank", func(t *testing.T) {
		res := mpirun(t, c, append([]string{"-l"}, cmd...)...)
		wantSet(t, res.stdout, "[0] o0", "[1] o1")
		wantSet(t, res.stderr, "[0] e0", "[1] e1")
	})
	t.Run("merge-stderr-to-stdout", func(t *testing.T) {
		res := mpirun(t, c, append([]string{"--merge-stderr-to-stdout"}, cmd...)...)
		wantSet(t, res.stdout, "o0", "e0", "o1", "e1")
		wantSet(t, res.stderr)
	})
	t.Run("timestamp-output", func(t *testing.T) {
		res := mpirun(t, c, append([]string{"--timestamp-output"}, cmd...)...)
		for _, l := range lines(res.stdout) {
			if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6} o[01]$`).MatchString(l) {
				t.Errorf("line without a timestamp: %q", l)
			}
		}
	})
	t.Run("output-filename", func(t *testing.T) {
		dir := t.TempDir()
		res := mpirun(t, c, append([]string{"--output-filename", dir}, cmd...)...)
		wantSet(t, res.stdout)
		for r := 0; r < 2; r++ {
			for stream, want := range map[string]string{"stdout": fmt.Sprintf("o%d\n", r), "stderr": fmt.Sprintf("e%d\n", r)} {
				got, err := os.ReadFile(filepath.Join(dir, "1", fmt.Sprintf("rank.%d", r), stream))
				if err != nil || string(got) != want {
					t.Errorf("rank %d %s file: %q, %v; want %q", r, stream, got, err, want)
				}
			}
		}
	})
}

// TestStdin: mpirun's stdin reaches rank 0 intact, every rank with --stdin
// all, and no rank with --stdin none; ranks that do not read are fine.
func TestStdin(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	input := make([]byte, 100<<20)
	for i := range input {
		input[i] = byte(i*7 + i>>13)
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(input))
	run := func(stdin []byte, args ...string) result {
		cmd := exec.Command(filepath.Join(bin, "mpirun"), args...)
		cmd.Env = append(os.Environ(), c.Env()...)
		cmd.Stdin = bytes.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		return result{status: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	}
	t.Run("100 MiB to rank 0", func(t *testing.T) {
		res := run(input, "sh", "-c", `if [ $PRSH_RANK = 0 ]; then echo "0 $(sha256sum | cut -d' ' -f1)"; else echo "$PRSH_RANK $(wc -c)"; fi`)
		wantSet(t, res.stdout, "0 "+sum, "1 0", "2 0")
	})
	t.Run("all", func(t *testing.T) {
		res := run([]byte("a\nb\n"), "--stdin", "all", "sh", "-c", `echo "$PRSH_RANK $(wc -l)"`)
		wantSet(t, res.stdout, "0 2", "1 2", "2 2")
	})
	t.Run("none", func(t *testing.T) {
		res := run([]byte("a\nb\n"), "--stdin", "none", "sh", "-c", `echo "$PRSH_RANK $(wc -l)"`)
		wantSet(t, res.stdout, "0 0", "1 0", "2 0")
	})
	t.Run("rank that never reads", func(t *testing.T) {
		res := run(input[:10<<20], "sh", "-c", `echo "$PRSH_RANK done"`)
		wantSet(t, res.stdout, "0 done", "1 done", "2 done")
		if res.status != 0 {
			t.Errorf("exit %d", res.status)
		}
	})
	if left := c.WaitNoLeftovers(5e9); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}

// mpirunLines picks mpirun's own lines out of a stderr full of the ranks'.
func mpirunLines(stderr string) string {
	var own []string
	for _, l := range lines(stderr) {
		if strings.HasPrefix(l, "mpirun") {
			own = append(own, l)
		}
	}
	return strings.Join(own, "\n")
}

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

// TestSlowReader: when mpirun's stdout is read slowly, the ranks are slowed
// down instead of mpirun buffering their output, and nothing is lost.
func TestSlowReader(t *testing.T) {
	plain, err := plainBin()
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, testbed.Config{Nodes: 2})
	cmd := exec.Command(filepath.Join(plain, "mpirun"), "sh", "-c", "head -c 104857600 /dev/zero")
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	watch := watchRSS(filepath.Join(plain, "mpirun"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the reader is late: everything must wait for it
	h := sha256.New()
	n, _ := io.Copy(h, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	rss := watch()
	zeros := sha256.Sum256(make([]byte, 2*104857600))
	if n != 2*104857600 || !bytes.Equal(h.Sum(nil), zeros[:]) {
		t.Fatalf("got %d bytes (sha256 %x), want 200 MiB of zeros", n, h.Sum(nil))
	}
	if rss > rssBound {
		t.Errorf("mpirun peaked at %d MiB while its reader was slow, bound %d MiB", rss>>20, rssBound>>20)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}

// TestUnreadStdout: mpirun's stdout is a pipe nobody reads, so every
// output stream up the tree is full. Signals still reach the ranks (control
// traffic does not queue behind output), and Ctrl-C still ends the job:
// once, after the drain timeout, saying why; twice, at once.
func TestUnreadStdout(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	// USR1 reaches the rank's whole process group: yes ignores it (and
	// keeps the pipe full), and the loop forks nothing for it to end, which
	// sh reported once as "User defined signal 1".
	rank := `trap 'echo got USR1 > "$MARKS/usr1.$PRSH_RANK"' USR1; touch "$MARKS/$PRSH_RANK"; (trap '' USR1; exec yes) & while :; do wait; done`
	for _, interrupts := range []int{1, 2} {
		t.Run(fmt.Sprintf("interrupts=%d", interrupts), func(t *testing.T) {
			unread, stdout, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer unread.Close()
			cmd, stderr, marks := startedTo(t, c, stdout, 4, "-np", "4", "--stdin", "none", "sh", "-c", rank)
			stdout.Close()
			waitPipeFull(t, unread)
			cmd.Process.Signal(syscall.SIGUSR1)
			for r := range 4 {
				waitFile(t, filepath.Join(marks, fmt.Sprintf("usr1.%d", r)))
			}
			cmd.Process.Signal(syscall.SIGINT)
			if interrupts == 2 {
				stderr.waitFor(t, "caught SIGINT")
				cmd.Process.Signal(syscall.SIGINT)
			}
			if status := waitExit(t, cmd); status != 130 {
				t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
			}
			want := []string{"mpirun: caught SIGINT, terminating the job"}
			if interrupts == 1 {
				want = append(want, "mpirun: gave up waiting for node001, node002 to finish: their ranks' output waits for mpirun's stdout or stderr to be read")
			}
			if got := lines(stderr.String()); !slices.Equal(got, want) {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, strings.Join(want, "\n"))
			}
			if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
				t.Fatalf("left running: %+v", left)
			}
		})
	}
}

// waitPipeFull waits until the pipe holds 64 KiB unread, Linux's default
// pipe capacity: its writer is blocked.
func waitPipeFull(t *testing.T, r *os.File) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		if n >= 64<<10 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pipe holds %d bytes after a minute, want 64 KiB", n)
		}
	}
}

// TestReaderGoesAway: `mpirun yes | head -1` ends like `yes | head -1`:
// mpirun dies of SIGPIPE (141 under pipefail), the reader got its line,
// and the ranks, which would print forever, are gone from every node.
func TestReaderGoesAway(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2})
	cmd := exec.Command("bash", "-c", `set -o pipefail; "$0" -np 6 yes | head -n 1`, filepath.Join(bin, "mpirun"))
	cmd.Env = append(os.Environ(), c.Env()...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	if status := cmd.ProcessState.ExitCode(); status != 141 {
		t.Errorf("exit %d, want 141 (SIGPIPE); stderr:\n%s", status, stderr.String())
	}
	if string(out) != "y\n" {
		t.Errorf("stdout %q, want one line \"y\"", out)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running after the reader went away: %+v", left)
	}
}
