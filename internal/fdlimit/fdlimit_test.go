package fdlimit

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"prsh/internal/fdlimit/fdtest"
)

// TestExplain: running out of descriptors names the limit that was
// reached, with its value; any other error is left alone.
func TestExplain(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	emfile := &os.SyscallError{Syscall: "socket", Err: syscall.EMFILE}
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial: %w", emfile), fmt.Sprintf("dial: socket: too many open files; the open-files limit of mpirun is reached (ulimit -n %d): raise it", lim.Cur)},
		{syscall.ENFILE, "too many open files in system; the system's open-files limit is reached (raise fs.file-max)"},
		{syscall.ENOSPC, "no space left on device"},
	}
	for _, c := range cases {
		got := Explain(c.err, "mpirun")
		if got.Error() != c.want {
			t.Errorf("Explain(%v) = %q, want %q", c.err, got, c.want)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("Explain(%v) does not wrap it", c.err)
		}
	}
}

// TestExplainAtTheLimit: a process at its limit gets EMFILE from the
// kernel, and the explanation names the limit.
func TestExplainAtTheLimit(t *testing.T) {
	fdtest.Exhaust(t, 0)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	_, err := os.Open(os.DevNull)
	want := fmt.Sprintf("; the open-files limit of mpirun is reached (ulimit -n %d): raise it", lim.Cur)
	if got := Explain(err, "mpirun"); err == nil || !strings.HasSuffix(got.Error(), want) {
		t.Errorf("at the limit: %v, want it to end with %q", got, want)
	}
}
