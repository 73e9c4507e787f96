package agent

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"syscall"
	"time"
)

// reserve is the slot of a session that asks at now, when the spawner's
// last reserved slot ends at last: it starts once both have come and
// lasts cost. Times are Unix nanoseconds, shared by every agent process.
func reserve(now, last int64, cost time.Duration) (start, end int64) {
	start = max(now, last)
	return start, start + int64(cost)
}

// reserveSlot reserves the session's slot in its spawner's state file
// (the end of the spawner's last slot, 8 bytes) under a short flock, and
// returns when the slot ends. The lock is not held while the session
// waits, so a process woken late by a busy machine delays only its own
// session, not every later one's, as on a real spawner's own CPU.
func (s *session) reserveSlot() (time.Time, error) {
	name := s.spawner
	if name == "" {
		name = "outside"
	}
	path := filepath.Join(s.cfg.Locks, name)
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return time.Time{}, fmt.Errorf("spawner state: %w", err)
	}
	defer syscall.Close(fd) // and with it the lock
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		return time.Time{}, fmt.Errorf("spawner state %s: %w", path, err)
	}
	var buf [8]byte
	var last int64
	if n, err := syscall.Pread(fd, buf[:], 0); err == nil && n == len(buf) {
		last = int64(binary.LittleEndian.Uint64(buf[:]))
	}
	_, end := reserve(time.Now().UnixNano(), last, s.cfg.SpawnCost)
	binary.LittleEndian.PutUint64(buf[:], uint64(end))
	if _, err := syscall.Pwrite(fd, buf[:], 0); err != nil {
		return time.Time{}, fmt.Errorf("spawner state %s: %w", path, err)
	}
	return time.Unix(0, end), nil
}
