package tcp

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestParsePorts(t *testing.T) {
	for in, want := range map[string]Ports{"": {}, "10000-10100": {10000, 10100}, "10000:10100": {10000, 10100}, "7-7": {7, 7}} {
		if got, err := ParsePorts(in); err != nil || got != want {
			t.Errorf("ParsePorts(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"10000", "a-b", "0-10", "10-9", "1-65536", "-5", "1-2-3"} {
		if _, err := ParsePorts(bad); err == nil || !strings.Contains(err.Error(), "want LO-HI") {
			t.Errorf("ParsePorts(%q): error %v", bad, err)
		}
	}
	if s := (Ports{10, 20}).String(); s != "10-20" {
		t.Errorf("String = %q", s)
	}
}

// TestListenIn: the listener takes the first free port of the range, the
// next one when that is taken, and fails naming the range when none is
// free.
func TestListenIn(t *testing.T) {
	probe, err := Listen("tcp4", "127.0.0.1:0") // a port that was free a moment ago
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	if port >= 65535 {
		t.Skip("no port after the probe's")
	}
	ports := Ports{port, port + 1}
	first, err := ListenIn("tcp4", "127.0.0.1", ports)
	if err != nil {
		t.Skipf("port %d was taken meanwhile: %v", port, err)
	}
	defer first.Close()
	if got := first.Addr().(*net.TCPAddr).Port; got != port {
		t.Fatalf("first listener on %d, want %d", got, port)
	}
	second, err := ListenIn("tcp4", "127.0.0.1", ports)
	if err != nil {
		t.Skipf("port %d was taken meanwhile: %v", port+1, err)
	}
	defer second.Close()
	if got := second.Addr().(*net.TCPAddr).Port; got != port+1 {
		t.Errorf("second listener on %d, want %d", got, port+1)
	}
	_, err = ListenIn("tcp4", "127.0.0.1", ports)
	want := "no free port in " + strconv.Itoa(port) + "-" + strconv.Itoa(port+1) + " on 127.0.0.1"
	if err == nil || err.Error() != want {
		t.Errorf("third listener: error %v, want %q", err, want)
	}
}
