package sim

import (
	"testing"

	"prsh/internal/purity"
)

// TestPure: the simulator is pure too. It drives the machine on a virtual
// clock, so nothing it imports may reach for the network, the clock,
// randomness or a goroutine; the testbed's sim command does the I/O.
func TestPure(t *testing.T) { purity.Check(t, "prsh/daemon/protocol/sim") }
