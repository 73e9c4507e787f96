package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hashicorp/yamux"

	"prsh/internal/mitm"
)

// editor decides what a man in the middle forwards in place of each of
// the dialer's records: it writes anything it likes to out, and returns
// false to stop forwarding and hang up.
type editor func(rec []byte, out net.Conn) bool

// tamperingProxy sits between a dialer and the listener at target: it
// forwards the handshake untouched, then hands each of the dialer's
// records to edit. What the listener sends goes back untouched.
func tamperingProxy(t *testing.T, target string, edit editor) *mitm.Proxy {
	t.Helper()
	return mitm.Start(t, target, func(from io.Reader, to net.Conn) {
		if _, err := io.CopyN(to, from, dialerMsgSize); err != nil {
			return
		}
		for {
			rec, err := readRawRecord(from)
			if err != nil || !edit(rec, to) {
				return
			}
		}
	})
}

// readRawRecord reads one record, header included, without opening it.
func readRawRecord(r io.Reader) ([]byte, error) {
	rec := make([]byte, recordHeader)
	if _, err := io.ReadFull(r, rec); err != nil {
		return nil, err
	}
	rec = append(rec, make([]byte, binary.BigEndian.Uint32(rec))...)
	_, err := io.ReadFull(r, rec[recordHeader:])
	return rec, err
}

// connectVia dials ln through p and returns both ends and the stream the
// dialer opened, as the listener sees it.
func connectVia(t *testing.T, ln *Listener, p *mitm.Proxy, s []byte) (d, l *Conn, out, in net.Conn) {
	t.Helper()
	ctx := timeout(t)
	// No keep-alive pings among the records the test counts.
	quiet := Options{KeepAlive: time.Hour}
	d, err := Dial(ctx, p.Addr(), s, quiet)
	if err != nil {
		t.Fatalf("Dial through the proxy: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	if l, err = ln.Accept(ctx); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	if out, err = d.Open(); err != nil {
		t.Fatal(err)
	}
	// yamux tells the peer of a stream with its first frame.
	if err := WriteFrame(out, 1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if in, err = l.Accept(); err != nil {
		t.Fatal(err)
	}
	if _, got, err := ReadFrame(in, MaxFrame); err != nil || string(got) != "hello" {
		t.Fatalf("first frame %q, %v", got, err)
	}
	return d, l, out, in
}

// bodyEditor hands change the dialer's second record of at least 1000
// bytes (the body of the second of the test's frames), and the record
// after it while change holds one back; every other record goes through
// as it is.
func bodyEditor(change func(rec []byte, out net.Conn, held *[]byte) bool) editor {
	bodies := 0
	var held []byte
	return func(rec []byte, out net.Conn) bool {
		if len(rec) >= 1000 {
			bodies++
		}
		if (bodies == 2 && len(rec) >= 1000) || held != nil {
			return change(rec, out, &held)
		}
		return forward(out, rec)
	}
}

func forward(out net.Conn, recs ...[]byte) bool {
	for _, r := range recs {
		if _, err := out.Write(r); err != nil {
			return false
		}
	}
	return true
}

// TestTamperedRecords: a man in the middle who changes, replays, reorders,
// drops or cuts short one of the dialer's records gets nothing past the
// listener: the frames before the tampering arrive as sent, the stream
// ends there, and the connection ends saying a record failed to open
// (or, cut short, ends as a lost connection does).
func TestTamperedRecords(t *testing.T) {
	tests := []struct {
		name     string
		change   func(rec []byte, out net.Conn, held *[]byte) bool
		tampered bool // else the connection ends as if cut
	}{
		{"flip a byte of the body", func(rec []byte, out net.Conn, held *[]byte) bool {
			rec[len(rec)/2] ^= 0x01
			return forward(out, rec)
		}, true},
		{"flip a byte of the length", func(rec []byte, out net.Conn, held *[]byte) bool {
			rec[3] ^= 0x01
			return forward(out, rec)
		}, true},
		{"flip a byte of the tag", func(rec []byte, out net.Conn, held *[]byte) bool {
			rec[len(rec)-1] ^= 0x80
			return forward(out, rec)
		}, true},
		{"replay", func(rec []byte, out net.Conn, held *[]byte) bool {
			return forward(out, rec, rec)
		}, true},
		{"reorder two", func(rec []byte, out net.Conn, held *[]byte) bool {
			if *held == nil {
				*held = rec
				return true
			}
			back := *held
			*held = nil
			return forward(out, rec, back)
		}, true},
		{"drop", func(rec []byte, out net.Conn, held *[]byte) bool { return true }, true},
		{"truncate", func(rec []byte, out net.Conn, held *[]byte) bool {
			forward(out, rec[:len(rec)/2])
			return false
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := secret(t)
			ln := listen(t, s, Options{KeepAlive: time.Hour})
			p := tamperingProxy(t, ln.Addr().String(), bodyEditor(tt.change))
			_, l, out, in := connectVia(t, ln, p, s)
			frames := [][]byte{bytes.Repeat([]byte{'a'}, 2000), bytes.Repeat([]byte{'b'}, 2000), bytes.Repeat([]byte{'c'}, 2000)}
			for i, f := range frames {
				// The tampering may end the link before the last writes.
				if err := WriteFrame(out, 2, f); err != nil && i == 0 {
					t.Fatal(err)
				}
			}
			// The frames that arrive are the first ones sent, as they were
			// sent (a replayed record's original among them); the last,
			// behind the tampering, never does.
			for i, f := range frames {
				_, got, err := ReadFrame(in, MaxFrame)
				if err != nil {
					if i == 0 {
						t.Fatalf("the frame before the tampered record: %v", err)
					}
					break
				}
				if i == len(frames)-1 || !bytes.Equal(got, f) {
					t.Fatalf("frame %d: read %d bytes %.10q…, past the tampering", i, len(got), got)
				}
			}
			select {
			case <-l.Done():
			case <-time.After(patience):
				t.Fatal("the listener's connection stayed up")
			}
			err := l.Err()
			if tt.tampered != errors.Is(err, ErrBadRecord) {
				t.Errorf("the listener's Err = %v; tampered with: %v", err, tt.tampered)
			}
		})
	}
}

// TestLinkIsSealed: what a stream carries, either way, never appears on
// the wire, and the untouched link delivers it intact.
func TestLinkIsSealed(t *testing.T) {
	s := secret(t)
	ln := listen(t, s, Options{KeepAlive: time.Hour})
	p := tamperingProxy(t, ln.Addr().String(), func(rec []byte, out net.Conn) bool { return forward(out, rec) })
	d, l, out, in := connectVia(t, ln, p, s)
	there := bytes.Repeat([]byte("-x SECRET_VALUE=hunter2 "), 5000) // beyond one record
	back := []byte("output of rank 0: the answer is 42")
	if err := WriteFrame(out, 3, there); err != nil {
		t.Fatal(err)
	}
	if _, got, err := ReadFrame(in, MaxFrame); err != nil || !bytes.Equal(got, there) {
		t.Fatalf("read %d bytes, %v; want the %d sent", len(got), err, len(there))
	}
	if err := WriteFrame(in, 4, back); err != nil {
		t.Fatal(err)
	}
	if _, got, err := ReadFrame(out, MaxFrame); err != nil || !bytes.Equal(got, back) {
		t.Fatalf("read %q, %v; want %q", got, err, back)
	}
	wire := p.Seen()
	for _, plain := range [][]byte{[]byte("hunter2"), []byte("the answer is 42"), []byte("hello")} {
		if bytes.Contains(wire, plain) {
			t.Errorf("%q travelled in the clear", plain)
		}
	}
	if d.Err() != nil || l.Err() != nil {
		t.Errorf("Err on a healthy link: %v, %v", d.Err(), l.Err())
	}
}

// testKeys are the two sides' keys of one connection.
func testKeys(t testing.TB, ns, nc []byte) (dialer, listener keys) {
	t.Helper()
	s := bytes.Repeat([]byte{7}, SecretSize)
	dialer, err := linkKeys(s, ns, nc, true)
	if err == nil {
		listener, err = linkKeys(s, ns, nc, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dialer, listener
}

func testDirection(t testing.TB, key []byte) *direction {
	t.Helper()
	d, err := newDirection(key)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sealAll seals each of plains into one stream of records.
func sealAll(t testing.TB, d *direction, plains ...[]byte) []byte {
	t.Helper()
	var out []byte
	for _, p := range plains {
		var err error
		if out, err = d.seal(out, p); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRecordsStayInTheirPlace: a record opens only with the key of its
// own connection and direction: not on another connection with the same
// secret, and not reflected back to its sender.
func TestRecordsStayInTheirPlace(t *testing.T) {
	ns, nc := bytes.Repeat([]byte{1}, nonceSize), bytes.Repeat([]byte{2}, nonceSize)
	dialer, listener := testKeys(t, ns, nc)
	otherDialer, otherListener := testKeys(t, ns, bytes.Repeat([]byte{3}, nonceSize))
	rec := sealAll(t, testDirection(t, dialer.send), []byte("launch: rm -rf ~"))
	opens := func(key []byte) bool {
		rr := recordReader{r: bytes.NewReader(rec), dir: testDirection(t, key)}
		_, err := io.ReadAll(&rr)
		return err == nil
	}
	if !opens(listener.receive) {
		t.Fatal("the listener cannot open the dialer's record")
	}
	for name, key := range map[string][]byte{
		"another connection's listener": otherListener.receive,
		"another connection's dialer":   otherDialer.receive,
		"its own sender":                dialer.receive,
	} {
		if opens(key) {
			t.Errorf("%s opened the record", name)
		}
	}
}

// TestRekey: both sides move to a new key every rekeyEvery records, in
// step; a reader that did not would fail at the first record of the new key.
func TestRekey(t *testing.T) {
	dialer, listener := testKeys(t, make([]byte, nonceSize), make([]byte, nonceSize))
	w := testDirection(t, dialer.send)
	w.rekeyEvery = 3
	var plains [][]byte
	for i := range 10 {
		plains = append(plains, []byte{byte(i)})
	}
	stream := sealAll(t, w, plains...)
	in := testDirection(t, listener.receive)
	in.rekeyEvery = 3
	rr := recordReader{r: bytes.NewReader(stream), dir: in}
	if got, err := io.ReadAll(&rr); err != nil || !bytes.Equal(got, bytes.Join(plains, nil)) {
		t.Fatalf("read %v, %v; want %v", got, err, bytes.Join(plains, nil))
	}
	stale := recordReader{r: bytes.NewReader(stream), dir: testDirection(t, listener.receive)}
	got, err := io.ReadAll(&stale)
	if !errors.Is(err, ErrBadRecord) || len(got) != 3 {
		t.Fatalf("a reader that keeps its key read %d records, %v; want 3, then ErrBadRecord", len(got), err)
	}
}

// TestRecordWriterSplits: a write larger than a record goes out in full
// records and a remainder, at most writeBatch bytes a write, and reads
// back whole however small the reads and however the bytes arrive; an
// empty write sends nothing.
func TestRecordWriterSplits(t *testing.T) {
	dialer, listener := testKeys(t, make([]byte, nonceSize), make([]byte, nonceSize))
	var wire countingBuffer
	rw := recordWriter{w: &wire, dir: testDirection(t, dialer.send)}
	big := bytes.Repeat([]byte("0123456789abcdef"), (6*maxRecord+100)/16)
	if n, err := rw.Write(nil); n != 0 || err != nil || wire.writes != 0 {
		t.Fatalf("empty Write: %d, %v, %d writes", n, err, wire.writes)
	}
	if n, err := rw.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v; want %d", n, err, len(big))
	}
	if wire.writes != 2 || wire.largest > writeBatch || wire.Len() != len(big)+7*(recordHeader+tagSize) {
		t.Errorf("%d writes (the largest %d bytes) of %d bytes in all, want 7 records in 2 writes of at most %d",
			wire.writes, wire.largest, wire.Len(), writeBatch)
	}
	sent := bytes.Clone(wire.Bytes())
	// A reader that takes a byte at a time gets every record through
	// the reader's own buffer rather than straight into its own.
	rr := recordReader{r: &wire, dir: testDirection(t, listener.receive)}
	if got, err := io.ReadAll(iotest.OneByteReader(&rr)); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// Records that arrive a byte at a time are put together whole.
	rr = recordReader{r: iotest.OneByteReader(bytes.NewReader(sent)), dir: testDirection(t, listener.receive)}
	if got, err := io.ReadAll(&rr); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes from a byte at a time, %v", len(got), err)
	}
}

// TestRecordWriterJoinsHeaders: a yamux data frame's header leaves in one
// write with the body yamux writes next: in the same record when the body
// is small, in a record of its own when it is large. Other headers (a
// window update) leave at once.
func TestRecordWriterJoinsHeaders(t *testing.T) {
	dialer, _ := testKeys(t, make([]byte, nonceSize), make([]byte, nonceSize))
	header := func(typ byte, length int) []byte {
		h := make([]byte, yamuxHeader)
		h[1] = typ
		binary.BigEndian.PutUint32(h[8:], uint32(length))
		return h
	}
	const typeData, typeWindowUpdate = 0, 1
	tests := []struct {
		name    string
		writes  [][]byte
		records []int // plaintext lengths
	}{
		{"small body", [][]byte{header(typeData, 100), make([]byte, 100)}, []int{yamuxHeader + 100}},
		{"large body", [][]byte{header(typeData, maxRecord+10), make([]byte, maxRecord+10)}, []int{yamuxHeader, maxRecord, 10}},
		{"window update", [][]byte{header(typeWindowUpdate, 1<<20)}, []int{yamuxHeader}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wire countingBuffer
			rw := recordWriter{w: &wire, dir: testDirection(t, dialer.send)}
			for _, w := range tt.writes {
				if n, err := rw.Write(w); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v; want %d", n, err, len(w))
				}
			}
			var records []int
			for wire.Len() > 0 {
				rec, err := readRawRecord(&wire)
				if err != nil {
					t.Fatal(err)
				}
				records = append(records, len(rec)-recordHeader-tagSize)
			}
			if wire.writes != 1 || !slices.Equal(records, tt.records) {
				t.Errorf("%d writes of records of %v bytes; want one write of %v", wire.writes, records, tt.records)
			}
		})
	}
}

type countingBuffer struct {
	bytes.Buffer
	writes, largest int
}

func (c *countingBuffer) Write(p []byte) (int, error) {
	c.writes++
	c.largest = max(c.largest, len(p))
	return c.Buffer.Write(p)
}

// FuzzRecordReader: whatever arrives, reading records never panics, never
// buffers more than two large frames' records, and yields only the
// plaintext the sender sealed, in order: anything else ends the stream
// with an error.
func FuzzRecordReader(f *testing.F) {
	dialer, listener := testKeys(f, make([]byte, nonceSize), make([]byte, nonceSize))
	plains := [][]byte{[]byte("first"), bytes.Repeat([]byte{'2'}, 300), []byte("third")}
	valid := sealAll(f, testDirection(f, dialer.send), plains...)
	first, second := len(plains[0])+recordHeader+tagSize, len(plains[1])+recordHeader+tagSize
	f.Add(valid)
	f.Add(valid[:first+second/2])                                                                                    // cut short
	f.Add(append(append(append([]byte{}, valid[first:first+second]...), valid[:first]...), valid[first+second:]...)) // reordered
	f.Add(append(append([]byte{}, valid[:first]...), valid...))                                                      // replayed
	f.Add(append(append([]byte{}, valid[:first]...), valid[first+second:]...))                                       // dropped
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, tagSize, 1, 2})
	want := bytes.Join(plains, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := recordReader{r: bytes.NewReader(data), dir: testDirection(t, listener.receive)}
		got, err := io.ReadAll(&rr)
		if cap(rr.buf) > readBuffer {
			t.Fatalf("buffered %d bytes, more than two large frames' records", cap(rr.buf))
		}
		if !bytes.HasPrefix(want, got) {
			t.Fatalf("read %q, which the sender never sealed", got)
		}
		if err == nil && !bytes.HasPrefix(valid, data) {
			t.Fatalf("read %d bytes of %q without an error", len(got), data)
		}
	})
}

// linkPair is a stream over loopback TCP between two yamux sessions, over
// sealed records or, for comparison, over the bare connection.
func linkPair(b *testing.B, sealed bool) (out, in net.Conn) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	rawOut, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	rawIn, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	var connOut, connIn io.ReadWriteCloser = rawOut, rawIn
	if sealed {
		dialer, listener := testKeys(b, make([]byte, nonceSize), bytes.Repeat([]byte{1}, nonceSize))
		if connOut, err = seal(rawOut, dialer); err == nil {
			connIn, err = seal(rawIn, listener)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	client, _ := yamux.Client(connOut, Options{}.yamux())
	server, _ := yamux.Server(connIn, Options{}.yamux())
	b.Cleanup(func() { client.Close(); server.Close() })
	if out, err = client.Open(); err == nil {
		_, err = out.Write([]byte{0})
	}
	if err == nil {
		in, err = server.Accept()
	}
	if err == nil {
		_, err = in.Read(make([]byte, 1))
	}
	if err != nil {
		b.Fatal(err)
	}
	return out, in
}

// BenchmarkLink compares a sealed link with a bare one: throughput of
// 64 KiB writes, and the round trip of a small frame. Besides wall time it
// reports the CPU time both ends spent per operation, which says more on
// a machine whose cores are shared.
//
//	go test -run '^$' -bench Link -benchtime 2000x ./transport
func BenchmarkLink(b *testing.B) {
	for _, v := range []struct {
		name           string
		sealed, joined bool
	}{{"plain", false, true}, {"sealed-unjoined", true, false}, {"sealed", true, true}} {
		run := func(name string, bench func(*testing.B, bool)) {
			b.Run(v.name+"/"+name, func(b *testing.B) {
				defer func(was bool) { joinHeaders = was }(joinHeaders)
				joinHeaders = v.joined
				bench(b, v.sealed)
			})
		}
		run("write-64KiB", benchThroughput)
		run("round-trip-64B", benchRoundTrip)
	}
}

func benchThroughput(b *testing.B, sealed bool) {
	out, in := linkPair(b, sealed)
	chunk := make([]byte, 64<<10)
	b.SetBytes(int64(len(chunk)))
	done := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.Discard, in, int64(b.N)*int64(len(chunk)))
		done <- err
	}()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		if _, err := out.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	reportCPU(b, cpu)
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64((cpuTime()-since).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func benchRoundTrip(b *testing.B, sealed bool) {
	out, in := linkPair(b, sealed)
	go func() {
		for {
			kind, p, err := ReadFrame(in, MaxFrame)
			if err != nil || WriteFrame(in, kind, p) != nil {
				return
			}
		}
	}()
	msg := make([]byte, 64)
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		if err := WriteFrame(out, 1, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ReadFrame(out, MaxFrame); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkRecordLayer is the record layer alone, without a socket: a
// yamux data frame of 64 KiB sealed, written to memory, read and opened,
// beside the bare AES-GCM seal and open of as many bytes, which are the
// floor. What is left is the layer's own cost: headers, buffers, copies.
//
//	go test -run '^$' -bench RecordLayer ./transport
func BenchmarkRecordLayer(b *testing.B) {
	dialer, listener := testKeys(b, make([]byte, nonceSize), make([]byte, nonceSize))
	body := make([]byte, 64<<10)
	header := make([]byte, yamuxHeader)
	binary.BigEndian.PutUint32(header[8:], uint32(len(body)))
	b.Run("records", func(b *testing.B) {
		var wire bytes.Buffer
		rw := recordWriter{w: &wire, dir: testDirection(b, dialer.send)}
		rr := recordReader{r: &wire, dir: testDirection(b, listener.receive)}
		got := make([]byte, len(body))
		b.SetBytes(int64(len(body)))
		defer reportCPU(b, cpuTime())
		for range b.N {
			rw.Write(header)
			rw.Write(body)
			if _, err := io.ReadFull(&rr, got[:yamuxHeader]); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(&rr, got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare-aes-gcm", func(b *testing.B) {
		seal, open := testDirection(b, dialer.send), testDirection(b, dialer.send)
		sealed := make([]byte, 0, len(body)+tagSize)
		b.SetBytes(int64(len(body)))
		defer reportCPU(b, cpuTime())
		for range b.N {
			sealed = seal.aead.Seal(sealed[:0], seal.nextNonce(), body, header[:recordHeader])
			if _, err := open.aead.Open(body[:0], seal.nextNonce(), sealed, header[:recordHeader]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("aes-gcm-open", func(b *testing.B) { benchOpen(b, testDirection(b, dialer.send), body, header) })
}

// benchOpen is the bare AES-256-GCM open of 64 KiB records alone: what
// mpirun pays per byte of output that reaches it over a sealed link, the
// floor of the seal's cost there (cpu-s/GB, to set beside mpirun's CPU
// per GB of output in BenchmarkOutput).
func benchOpen(b *testing.B, d *direction, body, header []byte) {
	sealed := d.aead.Seal(nil, d.nextNonce(), body, header[:recordHeader])
	plain := make([]byte, len(body))
	b.SetBytes(int64(len(body)))
	start := cpuTime()
	for range b.N {
		if _, err := d.aead.Open(plain[:0], d.nextNonce(), sealed, header[:recordHeader]); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - start
	b.ReportMetric(cpu.Seconds()/(float64(b.N)*float64(len(body))/1e9), "cpu-s/GB")
}
