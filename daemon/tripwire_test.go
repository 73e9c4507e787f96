package daemon

import (
	"net"
	"testing"
)

// TestHandshakeRank: the rank is read from a PMIx client's first
// message, here PMIx 4.2.2's as it connects (rank 37 of job-xyz, or of
// DVM job 12 of job-xyz), sent in two pieces; a message without a
// namespace of the job's names no rank.
func TestHandshakeRank(t *testing.T) {
	hello := func(ns string) string {
		return "\xff\xff\xff\xff\xff\xff\xff\xff4\x00\x00\x00\x00\x00\x00\x00native\x00\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
			ns + "\x00\x00\x00\x00%4.2.2rc2\x00v41\x00\x01hash\x00\x00"
	}
	for _, tc := range []struct {
		ns, job   string
		num, rank int
		ok        bool
	}{
		{"job-xyz", "job-xyz", 0, 37, true},
		{"job-xyz_12", "job-xyz", 12, 37, true},
		{"job-xyz", "job-other", 0, 0, false},
		{"job-xyzw", "job-xyz", 0, 0, false},
	} {
		client, server := net.Pipe()
		msg := hello(tc.ns)
		go func() {
			client.Write([]byte(msg[:40]))
			client.Write([]byte(msg[40:]))
			client.Close()
		}()
		num, rank, ok := handshakeRank(server, tc.job)
		server.Close()
		if num != tc.num || rank != tc.rank || ok != tc.ok {
			t.Errorf("namespace %s of job %s: job %d rank %d, %v; want %d, %d, %v", tc.ns, tc.job, num, rank, ok, tc.num, tc.rank, tc.ok)
		}
	}
}
