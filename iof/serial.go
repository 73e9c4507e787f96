package iof

import (
	"io"
	"sync"
)

// Serial lets goroutines share a writer: each Write goes out whole, never
// mixed with another's (mpirun's stdout shared by a client's copies, a
// cluster's log).
type Serial struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSerial serializes the writes to w.
func NewSerial(w io.Writer) *Serial { return &Serial{w: w} }

func (s *Serial) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
