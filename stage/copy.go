// Package stage copies the program (mpirun --preload-binary) and its
// shared libraries (--preload-libs) from the launch node down the spawn
// tree into a directory of each node's own, so that the ranks do not all
// read them from a shared file system (seed 004: 28 s on the first run of
// an allocation, 0.4 s from local storage).
//
// Each daemon receives the files on its parent's stage stream, writes
// them into its stage directory, and sends them on to each of its
// children from that very copy as it grows: the chunks are pipelined
// down the tree, each daemon holds one buffer per child, and a file of
// any size works. Each file is followed on the stream by the SHA-256 of
// the launch node's bytes, which every node checks against its copy.
// daemon/protocol/PROTOCOL.md ("Staging") is the wire rule.
package stage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"prsh/daemon/protocol"
	"prsh/ranks/guard"
)

// Copy is one node's copy of the staged files, written by Receive while
// Send reads it behind for the children. Its state (how much of each
// file is written, each file's checked sum, a failure) is shared under
// one lock; waiters are woken on every change.
type Copy struct {
	Dir   string
	files []protocol.StagedFile

	mu    sync.Mutex
	grown *sync.Cond
	have  []int64  // bytes of each file written; -1 before it exists
	sums  [][]byte // each file's checked sum, once whole
	err   error    // the copy failed, or was abandoned
}

// errAbandoned ends the senders of a daemon that exits.
var errAbandoned = errors.New("the stage copy was abandoned")

// NewCopy makes the node's stage directory (mode 0700) under its TMPDIR,
// named after the orted (guard.ScratchDir: the next orted on the node
// removes the directory of one that was killed outright).
func NewCopy(files []protocol.StagedFile) (*Copy, error) {
	dir, err := guard.ScratchDir("prsh-stage-", "the stage directory")
	if err != nil {
		return nil, err
	}
	return newCopy(dir, files), nil
}

func newCopy(dir string, files []protocol.StagedFile) *Copy {
	c := &Copy{Dir: dir, files: files, have: make([]int64, len(files)), sums: make([][]byte, len(files))}
	for i := range c.have {
		c.have[i] = -1
	}
	c.grown = sync.NewCond(&c.mu)
	return c
}

// Path is where file f of the job lives on this node.
func (c *Copy) Path(f protocol.StagedFile) string {
	return filepath.Join(c.Dir, filepath.FromSlash(f.Name))
}

// Program is the staged copy of the program the user wrote as arg, if it
// was staged.
func (c *Copy) Program(arg string) (string, bool) {
	for _, f := range c.files {
		if f.Arg == arg && f.Arg != "" {
			return c.Path(f), true
		}
	}
	return "", false
}

// LibDir is the directory of the staged libraries, "" when none were.
func (c *Copy) LibDir() string {
	for _, f := range c.files {
		if f.Arg == "" {
			return filepath.Join(c.Dir, LibDir)
		}
	}
	return ""
}

// Remove abandons the copy (its senders stop) and removes the directory.
func (c *Copy) Remove() error {
	c.fail(errAbandoned)
	return os.RemoveAll(c.Dir)
}

// grow records that file i now has n bytes.
func (c *Copy) grow(i int, n int64) {
	c.mu.Lock()
	c.have[i] = n
	c.mu.Unlock()
	c.grown.Broadcast()
}

func (c *Copy) checked(i int, sum []byte) {
	c.mu.Lock()
	c.sums[i] = sum
	c.mu.Unlock()
	c.grown.Broadcast()
}

// fail records the first failure and wakes every waiter.
func (c *Copy) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.grown.Broadcast()
}

// available waits until file i has more than off bytes (or is whole) and
// returns how many it has.
func (c *Copy) available(i int, off int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && c.have[i] <= off && c.have[i] < c.files[i].Size {
		c.grown.Wait()
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.have[i], nil
}

// sum waits for file i's checked sum.
func (c *Copy) sum(i int) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && c.sums[i] == nil {
		c.grown.Wait()
	}
	return c.sums[i], c.err
}
