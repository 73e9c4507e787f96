//go:build !pmix

package pmix

import "time"

// Available says whether this binary has the PMIx server.
const Available = false

// Server is absent from this build.
type Server struct{}

// Reply is absent from this build.
type Reply struct{}

// Send does nothing in this build.
func (*Reply) Send([]byte, error) {}

// LookupReply is absent from this build.
type LookupReply struct{}

// Send does nothing in this build.
func (*LookupReply) Send([]Name, error) {}

// Start fails: this build has no PMIx library.
func Start(tmpdir, host string, manyJobs bool, segs Segments, h Handler) (*Server, error) {
	return nil, ErrUnavailable
}

// RegisterJob is never reached in this build.
func (*Server) RegisterJob(Job) error { return ErrUnavailable }

// DeregisterJob is never reached in this build.
func (*Server) DeregisterJob(string) error { return ErrUnavailable }

// Client is never reached in this build.
func (*Server) Client(namespace string, rank int) ([]string, error) { return nil, ErrUnavailable }

// Topology is never reached in this build.
func (*Server) Topology() string { return "" }

// Sync does nothing in this build.
func (*Server) Sync(time.Duration) {}

// Settle does nothing in this build.
func (*Server) Settle(string, int, time.Duration) {}

// LocalData is never reached in this build.
func (*Server) LocalData(namespace string, rank int, answer func([]byte, error)) {
	answer(nil, ErrUnavailable)
}

// Close does nothing in this build.
func (*Server) Close() {}
