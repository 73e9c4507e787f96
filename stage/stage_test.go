package stage

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prsh/daemon/protocol"
)

// originals writes files of the given sizes (the first executable) and
// returns them as staged files.
func originals(t *testing.T, sizes ...int) ([]protocol.StagedFile, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	var files []protocol.StagedFile
	var data [][]byte
	for i, n := range sizes {
		b := make([]byte, n)
		rand.Read(b)
		mode := os.FileMode(0o644)
		if i == 0 {
			mode = 0o755
		}
		src := filepath.Join(dir, "f"+string(rune('a'+i)))
		if err := os.WriteFile(src, b, mode); err != nil {
			t.Fatal(err)
		}
		name := "lib/" + filepath.Base(src)
		if i == 0 {
			name = "0/prog"
		}
		files = append(files, protocol.StagedFile{Source: src, Name: name, Size: int64(n), Mode: uint32(mode)})
		data = append(data, b)
	}
	files[0].Arg = "./prog"
	return files, data
}

// relay runs one daemon's part: receive from r into a fresh copy and send
// that copy on to w while it is written.
func relay(t *testing.T, files []protocol.StagedFile, r io.Reader, w io.WriteCloser) (*Copy, <-chan error) {
	c := newCopy(t.TempDir(), files)
	done := make(chan error, 2)
	go func() { done <- Receive(r, c) }()
	go func() {
		err := Send(w, files, c)
		w.Close()
		done <- err
	}()
	return c, done
}

func wait(t *testing.T, done <-chan error, n int) []error {
	t.Helper()
	var errs []error
	for range n {
		errs = append(errs, <-done)
	}
	return errs
}

// Through two hops, every file arrives whole, with its mode, in the
// places the daemon looks for them; a file over several chunks and an
// empty one included.
func TestFilesArriveWholeThroughTwoHops(t *testing.T) {
	files, data := originals(t, 3*chunk+123, 0, 1000)
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	go func() { w1.CloseWithError(Send(w1, files, Originals(files))) }()
	c1, done1 := relay(t, files, r1, w2)
	c2 := newCopy(t.TempDir(), files)
	if err := Receive(r2, c2); err != nil {
		t.Fatal(err)
	}
	for _, err := range wait(t, done1, 2) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*Copy{c1, c2} {
		for i, f := range files {
			got, err := os.ReadFile(c.Path(f))
			if err != nil || !bytes.Equal(got, data[i]) {
				t.Fatalf("%s: %d bytes (%v), want the %d of the original", c.Path(f), len(got), err, len(data[i]))
			}
			if st, _ := os.Stat(c.Path(f)); uint32(st.Mode().Perm()) != f.Mode {
				t.Fatalf("%s: mode %v, want %o", c.Path(f), st.Mode(), f.Mode)
			}
		}
		if p, ok := c.Program("./prog"); !ok || p != filepath.Join(c.Dir, "0", "prog") {
			t.Fatalf("Program(./prog) = %q, %v", p, ok)
		}
		if c.LibDir() != filepath.Join(c.Dir, "lib") {
			t.Fatalf("LibDir = %q", c.LibDir())
		}
	}
}

// A daemon passes each chunk on as it arrives: its child sees the start
// of a file whose end has not left the launch node yet.
func TestChunksArePassedOnBeforeTheFileIsWhole(t *testing.T) {
	files, data := originals(t, 4*chunk)
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	_, done := relay(t, files, r1, w2)
	go w1.Write(data[0][:chunk]) // the first chunk only, for now
	got := make([]byte, chunk)
	read := make(chan error, 1)
	go func() { _, err := io.ReadFull(r2, got); read <- err }()
	select {
	case err := <-read:
		if err != nil || !bytes.Equal(got, data[0][:chunk]) {
			t.Fatalf("the child got a wrong first chunk (%v)", err)
		}
	case <-time.After(2 * time.Minute): // a hang, not a speed bound
		t.Fatal("the first chunk was not passed on before the rest came")
	}
	w1.CloseWithError(errors.New("stop"))
	r2.Close()
	wait(t, done, 2)
}

// Bytes changed on the way are caught by the node that got them, and the
// error names the file.
func TestChangedBytesAreCaught(t *testing.T) {
	files, _ := originals(t, chunk+10)
	r, w := io.Pipe()
	go func() { w.CloseWithError(Send(flipper{w}, files, Originals(files))) }()
	err := Receive(r, newCopy(t.TempDir(), files))
	if err == nil || !strings.Contains(err.Error(), "differs from the launch node's") || !strings.Contains(err.Error(), files[0].Source) {
		t.Fatalf("got %v, want a checksum mismatch naming %s", err, files[0].Source)
	}
}

// flipper changes the first byte of every write.
type flipper struct{ io.Writer }

func (f flipper) Write(p []byte) (int, error) {
	q := append([]byte(nil), p...)
	q[0] ^= 1
	return f.Writer.Write(q)
}

// A stream that ends early is an error, and the senders reading that
// copy stop instead of waiting for ever.
func TestShortStreamFailsTheCopyAndItsSenders(t *testing.T) {
	files, data := originals(t, 2*chunk)
	c := newCopy(t.TempDir(), files)
	sent := make(chan error, 1)
	go func() { sent <- Send(io.Discard, files, c) }()
	err := Receive(bytes.NewReader(data[0][:chunk+1]), c)
	if err == nil || !strings.Contains(err.Error(), "ended early") {
		t.Fatalf("got %v, want an early end", err)
	}
	var se SourceError
	if err := <-sent; !errors.As(err, &se) {
		t.Fatalf("the sender ended with %v, want a SourceError", err)
	}
}

// A stage directory that cannot be written is an error naming the file.
func TestUnwritableCopyIsAnError(t *testing.T) {
	files, _ := originals(t, 10)
	c := newCopy(filepath.Join(t.TempDir(), "gone"), files)
	os.WriteFile(c.Dir, nil, 0o600) // a file where the directory should be
	var stream bytes.Buffer
	Send(&stream, files, Originals(files))
	err := Receive(&stream, c)
	if err == nil || !strings.Contains(err.Error(), "cannot stage "+files[0].Source) {
		t.Fatalf("got %v, want cannot stage %s", err, files[0].Source)
	}
}

// The plan names the launch node and says why a program cannot be staged.
func TestPlanRefusesWhatCannotRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644)
	for arg, want := range map[string]string{
		"./missing":                "head: --preload-binary: " + filepath.Join(dir, "missing") + ": no such file on the launch node",
		"./data":                   "head: --preload-binary: " + filepath.Join(dir, "data") + ": not executable",
		"no-such-program-anywhere": "head: --preload-binary: no-such-program-anywhere: not found in the PATH of the launch node",
	} {
		_, err := Plan("head", []Program{{Arg: arg, Wdir: dir}}, false)
		var pe PlanError
		if !errors.As(err, &pe) || err.Error() != want {
			t.Errorf("Plan(%s) = %v, want %q", arg, err, want)
		}
	}
}

// The closure of a dynamically linked system program holds no glibc
// piece, and each library is where the name says.
func TestLibrariesLeaveGlibcOut(t *testing.T) {
	libs, err := Libraries([]string{"/bin/ls"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if isGlibc(l.Name) || filepath.Base(l.Path) != l.Name {
			t.Errorf("%+v should not be staged", l)
		}
	}
	if libs, err := Libraries([]string{"/bin/sh"}); err != nil || len(libs) != 0 {
		t.Errorf("/bin/sh needs only glibc, got %v, %v", libs, err)
	}
}
