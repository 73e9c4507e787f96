package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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

// wantSet checks the lines of text, in any order.
func wantSet(t *testing.T, text string, want ...string) {
	t.Helper()
	got := map[string]int{}
	for _, l := range lines(text) {
		got[l]++
	}
	for _, w := range want {
		if got[w] != 1 {
			t.Errorf("line %q seen %d times in:\n%s", w, got[w], text)
		}
		delete(got, w)
	}
	for l := range got {
		t.Errorf("unexpected line %q", l)
	}
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
