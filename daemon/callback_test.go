package daemon

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"prsh/transport"
)

// An orted whose lifeline ends while it is still calling back its parent
// gives up at once, whether the parent cannot be reached or never sends
// the job. Without the lifeline it would retry until welcomeTimeout, and
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
		"parent silent": func(t *testing.T) string {
			ln, err := transport.Listen("127.0.0.1:0", secret, transport.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go ln.Accept(context.Background()) // admitted, never welcomed
			return transport.URI(ln.Addr())
		},
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
			case <-time.After(welcomeTimeout + 10*time.Second):
				t.Fatal("the orphaned orted kept calling back")
			}
		})
	}
}
