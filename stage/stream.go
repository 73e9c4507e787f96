package stage

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"prsh/daemon/protocol"
)

// chunk is how much a sender reads and writes at a time: the whole of
// the memory one child's stream takes.
const chunk = 256 << 10

// LibDir is where the libraries go in the stage directory.
const LibDir = "lib"

// Source is what a daemon sends its children: the originals at mpirun,
// its own copy as it is written elsewhere.
type Source interface {
	// open opens file i once it exists.
	open(i int) (*os.File, error)
	// available waits until file i has more than off bytes, or is whole,
	// and returns how many it has.
	available(i int, off int64) (int64, error)
	// sum is the launch node's SHA-256 of file i; read is the sum of what
	// this sender read of it.
	sumOf(i int, read []byte) ([]byte, error)
}

// Originals are the launch node's files, sent as they are read.
type Originals []protocol.StagedFile

func (o Originals) open(i int) (*os.File, error) { return os.Open(o[i].Source) }

func (o Originals) available(i int, off int64) (int64, error) { return o[i].Size, nil }

func (o Originals) sumOf(i int, read []byte) ([]byte, error) { return read, nil }

func (c *Copy) open(i int) (*os.File, error) {
	if _, err := c.available(i, -1); err != nil {
		return nil, err
	}
	return os.Open(c.Path(c.files[i]))
}

func (c *Copy) sumOf(i int, _ []byte) ([]byte, error) { return c.sum(i) }

// SourceError is a sender's failure to read what it sends (as opposed to
// the child's stream going away).
type SourceError struct{ error }

func (e SourceError) Unwrap() error { return e.error }

// Send writes every file of the source on w, in order, each followed by
// its sum, keeping at most one chunk in memory.
func Send(w io.Writer, files []protocol.StagedFile, src Source) error {
	buf := make([]byte, chunk)
	for i, f := range files {
		if err := sendFile(w, i, f, src, buf); err != nil {
			return err
		}
	}
	return nil
}

func sendFile(w io.Writer, i int, f protocol.StagedFile, src Source, buf []byte) error {
	in, err := src.open(i)
	if err != nil {
		return SourceError{err}
	}
	defer in.Close()
	h := sha256.New()
	for off := int64(0); off < f.Size; {
		have, err := src.available(i, off)
		if err != nil {
			return SourceError{err}
		}
		n, err := in.ReadAt(buf[:min(int64(len(buf)), have-off)], off)
		if n == 0 && err != nil {
			if err == io.EOF {
				err = fmt.Errorf("it is shorter than the %d bytes it had (changed while being sent?)", f.Size)
			}
			return SourceError{fmt.Errorf("reading %s: %w", f.Source, err)}
		}
		h.Write(buf[:n])
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		off += int64(n)
	}
	sum, err := src.sumOf(i, h.Sum(nil))
	if err != nil {
		return SourceError{err}
	}
	_, err = w.Write(sum)
	return err
}

// Receive reads the files from r into the copy, checks each against the
// sum that follows it and gives it its mode. Its error is worded for the
// user, the node's name aside.
func Receive(r io.Reader, c *Copy) error {
	err := receive(r, c)
	if err != nil {
		c.fail(err)
	}
	return err
}

func receive(r io.Reader, c *Copy) error {
	buf := make([]byte, chunk)
	for i, f := range c.files {
		if err := receiveFile(r, c, i, f, buf); err != nil {
			return err
		}
	}
	return nil
}

func receiveFile(r io.Reader, c *Copy, i int, f protocol.StagedFile, buf []byte) error {
	path := c.Path(f)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cannot stage %s: %w", f.Source, err)
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("cannot stage %s: %w", f.Source, err)
	}
	defer out.Close()
	c.grow(i, 0)
	h := sha256.New()
	if err := copyInto(out, r, c, i, f, h, buf); err != nil {
		return err
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, want); err != nil {
		return fmt.Errorf("the copy of %s from its parent ended early: %w", f.Source, noEOF(err))
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return fmt.Errorf("the copy of %s differs from the launch node's (SHA-256 %x, want %x)", f.Source, got[:8], want[:8])
	}
	if err := finish(out, f); err != nil {
		return fmt.Errorf("cannot stage %s: %w", f.Source, err)
	}
	c.checked(i, want)
	return nil
}

// copyInto writes file i's bytes from r to out, announcing each chunk.
func copyInto(out *os.File, r io.Reader, c *Copy, i int, f protocol.StagedFile, h hash.Hash, buf []byte) error {
	for off := int64(0); off < f.Size; {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), f.Size-off)])
		if err != nil {
			return fmt.Errorf("the copy of %s from its parent ended early: %w", f.Source, noEOF(err))
		}
		if _, err := out.Write(buf[:n]); err != nil {
			return fmt.Errorf("cannot stage %s: %w", f.Source, err)
		}
		h.Write(buf[:n])
		off += int64(n)
		c.grow(i, off)
	}
	return nil
}

// finish makes the copy durable enough to run and gives it its mode.
func finish(out *os.File, f protocol.StagedFile) error {
	if err := out.Chmod(os.FileMode(f.Mode) & os.ModePerm); err != nil {
		return err
	}
	return out.Close()
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
