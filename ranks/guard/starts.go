package guard

import (
	"runtime"
	"sync"
)

// parallelStarts is how many ranks the guard starts side by side. A
// start returns once the new process has exec'd, and a rank in a session
// of its own waits its turn in a new scheduling group (autogroup) before
// it can: one at a time, with 64 busy ranks on 2 CPUs a start took 36 ms,
// and the last of 256 Open MPI ranks reached main 62 s after the first
// (ORTE's: 14 s); eight at a time, 20 s.
const parallelStarts = 8

// starts bounds the starts under way. The runtime holds a thread's P
// while it forks, until the child has exec'd, so the guard runs on one P
// more than it may start at once from its first start until a watch tick
// finds the starts over, and then on one again (RunGuard).
type starts struct {
	slots   chan struct{}
	mu      sync.Mutex
	running int  // starts under way
	since   int  // starts begun since the last look
	raised  bool // GOMAXPROCS is parallelStarts+1
}

func newStarts() *starts { return &starts{slots: make(chan struct{}, parallelStarts)} }

// begin waits for a free slot and takes it.
func (s *starts) begin() {
	s.slots <- struct{}{}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running++
	s.since++
	if !s.raised {
		s.raised = true
		runtime.GOMAXPROCS(parallelStarts + 1)
	}
}

// end gives a start's slot back.
func (s *starts) end() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	<-s.slots
}

// look is called at each of the watch's ticks: the first tick with no
// start under way or begun since the last one puts the guard back on one P.
func (s *starts) look() {
	s.mu.Lock()
	defer s.mu.Unlock()
	quiet := s.running == 0 && s.since == 0
	s.since = 0
	if quiet && s.raised {
		s.raised = false
		runtime.GOMAXPROCS(1)
	}
}
