package transport

import (
	"os"
	"testing"
	"time"

	"prsh/internal/stall/stalltest"
)

// TestLinkSurvivesAStall: a process holding both ends of a link is
// stopped for three silence bounds, as when a machine so loaded that
// nothing runs for seconds starves a daemon and its peer alike, then
// continued. Neither end takes the other for silent: time a watch slept
// through is no evidence against the peer. (A peer that stops while this
// side runs is still found silent: TestSilentPeerEndsLink.)
func TestLinkSurvivesAStall(t *testing.T) {
	if stalltest.Child() {
		holdLinkThroughStall(t)
		return
	}
	stalltest.Stop(t, "TestLinkSurvivesAStall", "linked", 3*stallSilence)
}

const stallSilence = time.Second

// holdLinkThroughStall links a dialer and a listener, says so, and then
// fails if either end ends within two silence bounds of the stall that
// the parent imposes.
func holdLinkThroughStall(t *testing.T) {
	opt := Options{KeepAlive: 50 * time.Millisecond, Silence: stallSilence}
	d, l := directLink(t, opt, opt)
	time.Sleep(100 * time.Millisecond) // both watches have woken at least once
	os.Stdout.WriteString("linked\n")
	// The parent stops this process for 3 s: wait for that to have
	// happened and ended, then for two bounds more.
	outlives(t, 3*stallSilence+2*stallSilence, d, l)
}
