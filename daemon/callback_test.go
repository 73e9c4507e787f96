package daemon

import (
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"prsh/daemon/protocol"
	"prsh/internal/timeouts"
	"prsh/transport"
)

// An orted whose lifeline ends while it is still calling back its parent
// gives up at once, whether the parent cannot be reached or never sends
// the job. Without the lifeline it would retry until its callback timeout, and
// when mpirun dies early (`mpirun yes | head -1`) outlive it by that long.
func TestOrphanedWhileCallingBack(t *testing.T) {
	secret, err := transport.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(t *testing.T) string{
		"parent gone": func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln.Close() // connections are refused: the dial is retried
			return transport.URI(ln.Addr())
		},
		"parent silent": func(t *testing.T) string { return silentParent(t, secret) },
	}
	for name, parent := range cases {
		t.Run(name, func(t *testing.T) {
			lifeline, hangUp := io.Pipe()
			done := make(chan error, 1)
			go func() {
				_, err := Run(context.Background(), Config{
					ID: 1, Node: "node001", ParentAddr: parent(t), Secret: secret,
					Bind: "127.0.0.1", Lifeline: lifeline,
				})
				done <- err
			}()
			time.Sleep(200 * time.Millisecond) // let it start calling back
			hangUp.Close()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "node001: its parent's session ended") {
					t.Fatalf("Run returned %v, want the lifeline named", err)
				}
			case <-time.After(ms(timeouts.Default().CallbackMS) + 10*time.Second):
				t.Fatal("the orphaned orted kept calling back")
			}
		})
	}
}

// silentParent is a parent that admits a connection and never welcomes it.
func silentParent(t *testing.T, secret []byte) string {
	ln, err := transport.Listen("127.0.0.1:0", secret, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go ln.Accept(context.Background())
	return transport.URI(ln.Addr())
}

// An orted waits for its Welcome twice the job's callback timeout (given
// in its config, from its argv), not a fixed time, and then says which
// bound it gave up on.
func TestWelcomeTimeoutFollowsJob(t *testing.T) {
	secret, err := transport.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Config{
		ID: 1, Node: "node001", ParentAddr: silentParent(t, secret), Secret: secret,
		Bind: "127.0.0.1", Timeouts: timeouts.Timeouts{CallbackMS: 300},
	})
	want := "node001: waiting for the job from parent: no job within twice the callback timeout (600ms)"
	if err == nil || err.Error() != want {
		t.Fatalf("Run returned %v, want %q", err, want)
	}
}

// A parent tells each child orted the job's bounds that are not the
// defaults (the callback timeout, say) in its argv: they are no secret,
// and the orted needs them before its Welcome.
func TestOrtedArgvCarriesTimeouts(t *testing.T) {
	for _, tt := range []struct {
		bounds timeouts.Timeouts
		want   string // "" = no --timeouts
	}{
		{timeouts.Default(), ""},
		{timeouts.Timeouts{CallbackMS: 1500}.WithDefaults(), "callback=1.5s"},
		{timeouts.Timeouts{CallbackMS: 90_000, SilenceMS: 3000, GuardStoppedMS: 5000}.WithDefaults(), "silence=3s,callback=1m30s,guard-stopped=5s"},
	} {
		job := protocol.JobSpec{OrtedPath: "/opt/orted", Timeouts: tt.bounds}
		argv := ortedArgv(job, "tcp://10.0.0.1:4000", 3, "node003")
		i := slices.Index(argv, "--timeouts")
		switch {
		case tt.want == "" && i >= 0:
			t.Errorf("default bounds: argv %q, want no --timeouts", argv)
		case tt.want != "" && (i < 0 || i+1 == len(argv) || argv[i+1] != tt.want):
			t.Errorf("argv %q, want --timeouts %s", argv, tt.want)
		}
	}
}
