package ranks

import (
	"testing"
	"time"

	"prsh/internal/stall"
)

// The guard's silence counts only time in which the daemon ran: a
// daemon starved for most of the bound must not kill a guard that
// answered as soon as it could; past Stretch bounds of wall time, the
// wall time counts.
func TestGuardSilenceLeavesOutOwnStalls(t *testing.T) {
	h := NewNodeGuard(nil)
	limit := 10 * time.Second
	h.heardAt, h.heardLost = time.Now().Add(-12*time.Second), stall.Lost()-8*time.Second
	if s := h.silence(limit); s >= limit || s < 3*time.Second {
		t.Errorf("silence after 12 s of which 8 s stalled = %v, want about 4 s", s)
	}
	h.heardAt = time.Now().Add(-stall.Stretch * limit)
	if s := h.silence(limit); s < limit {
		t.Errorf("silence after %d bounds of wall time = %v, want at least the bound", stall.Stretch, s)
	}
}
