package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

func TestNewCommandErrors(t *testing.T) {
	for _, tmpl := range []string{"", "  \t", "ssh 'x", `ssh "x`, "ssh %p", "ssh %"} {
		if c, err := NewCommand(tmpl); err == nil {
			t.Errorf("NewCommand(%q) = %v, want an error", tmpl, c)
		}
	}
}

func TestCommandArgv(t *testing.T) {
	argv := []string{"orted", "--uri", "tcp://10.0.0.1:5000", "--name", "a b"}
	tests := []struct {
		tmpl string
		want []string
	}{
		{"ssh -F cfg %h", []string{"ssh", "-F", "cfg", "node7"}},
		{"rsh %h", []string{"rsh", "node7"}},
		{"srun -N1 -n1 -w %h", []string{"srun", "-N1", "-n1", "-w", "node7"}},
		{"srun -N1 -n1", []string{"srun", "-N1", "-n1"}}, // no %h: allowed
		{"ssh root@%h-ib", []string{"ssh", "root@node7-ib"}},
		{`ssh -o "ProxyCommand ssh -W %%h:%%p gw" %h`, []string{"ssh", "-o", "ProxyCommand ssh -W %h:%p gw", "node7"}},
		{`'/opt/my ssh' %h`, []string{"/opt/my ssh", "node7"}},
	}
	tail := []string{"orted", "--uri", "tcp://10.0.0.1:5000", "--name", "'a b'"}
	for _, tt := range tests {
		c, err := NewCommand(tt.tmpl)
		if err != nil {
			t.Fatalf("NewCommand(%q): %v", tt.tmpl, err)
		}
		want := append(tt.want, tail...)
		if got := c.Argv("node7", argv); !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %q\nwant %q", tt.tmpl, got, want)
		}
	}
}

// TestCommandRunsLikeSSH uses a launcher that behaves like ssh: it joins
// its arguments and has a shell split them again, so the argv's quoting is
// exercised for real.
func TestCommandRunsLikeSSH(t *testing.T) {
	c, err := NewCommand(`sh -c 'PRSH_HOST=%h; export PRSH_HOST; eval "$*"' fake-ssh`)
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"sh", "-c", `read s; echo "$PRSH_HOST got '$s' $1" >&2; exit 5`, "sh", "a  b"}
	p, err := c.Start(testCtx(t), "node3", argv, []byte("payload\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wantExit(t, waitFor(t, p), 5, "node3 got 'payload' a  b")
}

// TestCommandEnv is the plain-words case: the launcher execs its
// arguments directly (like srun).
func TestCommandEnv(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "orted.sh")
	body := "read s\necho \"$PRSH_HOST $s\" > " + dir + "/got\ncat >/dev/null\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := NewCommand("env PRSH_HOST=%h")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(testCtx(t), "node4", []string{"sh", script}, []byte("hi\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, filepath.Join(dir, "got")); got != "node4 hi\n" {
		t.Errorf("got %q", got)
	}
	assertRunning(t, p, filepath.Join(dir, "nothing"))
	if err := closeAndWait(t, p); err != nil {
		t.Errorf("Wait after Close: %v", err)
	}
}

// TestCommandLauncherFails: the launcher's own failure (ssh's 255) reaches
// Wait with its stderr.
func TestCommandLauncherFails(t *testing.T) {
	c, err := NewCommand(`sh -c 'echo "fake-ssh: connect to host $0 port 22: Connection refused" >&2; exit 255' %h`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(testCtx(t), "node9", []string{"orted"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wantExit(t, waitFor(t, p), 255, "connect to host node9 port 22: Connection refused")
}

// TestCommandCloseKills: a launcher that outlives its stdin is killed.
func TestCommandCloseKills(t *testing.T) {
	c, err := NewCommand(`sh -c 'exec sleep 600' %h`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(testCtx(t), "node1", []string{"orted"}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	xe := wantExit(t, closeAndWait(t, p), 137, "")
	if xe.Signal != "KILL" {
		t.Errorf("signal %q, want KILL", xe.Signal)
	}
}

// TestCommandLauncherDropped: a launcher ssh whose connection is dropped in
// the version exchange (exit 255, kex_exchange_identification) before any
// sign of life is run again; after dropTries such exits Wait says so.
func TestCommandLauncherDropped(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	// The fake ssh is dropped while the count is at most $DROPS.
	fake := `n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n >"$COUNT"; ` +
		`if [ $n -le "$DROPS" ]; then echo "kex_exchange_identification: read: Connection reset by peer" >&2; exit 255; fi; exec "$@"`
	c, err := NewCommand(`sh -c '` + fake + `' %h`)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("COUNT", count)
	t.Setenv("DROPS", itoa(dropTries-1))
	p, err := c.Start(testCtx(t), "node1", []string{"echo", "alive"}, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, p); err != nil {
		t.Errorf("after %d drops: %v", dropTries-1, err)
	}
	p.Close()
	if got := waitFile(t, count); got != itoa(dropTries)+"\n" {
		t.Errorf("launcher ran %q times, want %d", got, dropTries)
	}

	os.Remove(count)
	t.Setenv("DROPS", "100")
	p, err = c.Start(testCtx(t), "node1", []string{"echo", "alive"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = waitFor(t, p)
	p.Close()
	wantErr(t, err, fmt.Sprintf("ssh: connection dropped during the handshake %d times", dropTries), "kex_exchange_identification")
	var xe *ExitError
	if !errors.As(err, &xe) || xe.Status != 255 {
		t.Errorf("got %v, want it to wrap the launcher's exit 255", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
