package daemon

import (
	"net"
	"testing"
)

// TestHandshakeRank: the rank is read from a PMIx client's first
// message, here PMIx 4.2.2's as it connects (rank 37 of job-xyz), sent in
// two pieces; a message without the job's namespace names no rank.
func TestHandshakeRank(t *testing.T) {
	hello := "\xff\xff\xff\xff\xff\xff\xff\xff4\x00\x00\x00\x00\x00\x00\x00native\x00\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
		"job-xyz\x00\x00\x00\x00%4.2.2rc2\x00v41\x00\x01hash\x00\x00"
	for _, tc := range []struct {
		job  string
		rank int
		ok   bool
	}{{"job-xyz", 37, true}, {"job-other", 0, false}} {
		client, server := net.Pipe()
		go func() {
			client.Write([]byte(hello[:40]))
			client.Write([]byte(hello[40:]))
			client.Close()
		}()
		rank, ok := handshakeRank(server, tc.job)
		server.Close()
		if rank != tc.rank || ok != tc.ok {
			t.Errorf("job %s: rank %d, %v; want %d, %v", tc.job, rank, ok, tc.rank, tc.ok)
		}
	}
}
