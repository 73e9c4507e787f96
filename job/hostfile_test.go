package job

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseHostfile(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Host
	}{
		{"plain", "a\nb\n", []Host{{"a", 1, 0}, {"b", 1, 0}}},
		{"no final newline", "a\nb", []Host{{"a", 1, 0}, {"b", 1, 0}}},
		{"slots", "a slots=4\nb slots=2", []Host{{"a", 4, 0}, {"b", 2, 0}}},
		{"max_slots", "a slots=4 max_slots=8", []Host{{"a", 4, 8}}},
		{"max_slots only", "a max_slots=8", []Host{{"a", 1, 8}}},
		{"keyword order", "a max_slots=8 slots=4", []Host{{"a", 4, 8}}},
		{"hydra", "a:4\nb:2 max_slots=3", []Host{{"a", 4, 0}, {"b", 2, 3}}},
		{"comments and blanks", "# cluster\n\n  \na slots=2 # two cores\n\t# indented\nb#no space\n",
			[]Host{{"a", 2, 0}, {"b", 1, 0}}},
		{"repeats accumulate", "a\nb slots=2\na slots=3\n", []Host{{"a", 4, 0}, {"b", 2, 0}}},
		{"later max_slots wins", "a slots=1 max_slots=2\na max_slots=4\n", []Host{{"a", 2, 4}}},
		{"earlier max_slots kept", "a slots=1 max_slots=4\na\n", []Host{{"a", 2, 4}}},
		{"spaces around =", "a slots = 4 max_slots= 6", []Host{{"a", 4, 6}}},
		{"synonyms", "a count=2 max-slots=4\nb cpu=3 slots_max=3\nc slots-max=1", []Host{{"a", 2, 4}, {"b", 3, 3}, {"c", 1, 1}}},
		{"upper case keyword", "a SLOTS=2", []Host{{"a", 2, 0}}},
		{"crlf", "a slots=2\r\nb\r\n", []Host{{"a", 2, 0}, {"b", 1, 0}}},
		{"user@host", "me@a slots=2", []Host{{"me@a", 2, 0}}},
	}
	for _, tt := range tests {
		got, err := ParseHostfile(strings.NewReader(tt.in), "hosts")
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParseHostfileErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `hosts: no hosts`},
		{"# only a comment\n\n", `hosts: no hosts`},
		{"a slot=4", `hosts:1: unknown keyword "slot" (want slots or max_slots)`},
		{"a\nb slots=x", `hosts:2: slots "x" is not a positive whole number`},
		{"a slots=", `hosts:1: slots "" is not a positive whole number`},
		{"a slots=0", `hosts:1: slots must be at least 1`},
		{"a slots=-2", `hosts:1: slots "-2" is not a positive whole number`},
		{"a max_slots=0", `hosts:1: max_slots must be at least 1`},
		{"a slots=4=5", `hosts:1: slots "4=5" is not`},
		{"a slots=4 max_slots=2", `hosts:1: host a: slots=4 exceeds max_slots=2`},
		{"a slots=2 max_slots=3\n\na slots=2", `hosts:3: host a: slots=4 exceeds max_slots=3`},
		{"a slots=3\na max_slots=2", `hosts:2: host a: slots=4 exceeds max_slots=2`},
		{"a slots=2 slots=3", `hosts:1: slots given twice on one line`},
		{"a:2 slots=3", `hosts:1: slots given twice on one line`},
		{"a max_slots=2 max-slots=3", `hosts:1: max-slots given twice on one line`},
		{"a b", `hosts:1: unexpected "b" after the host name (want slots=N or max_slots=N; one host per line)`},
		{"slots=4", `hosts:1: line starts with "slots=4"; expected a host name first`},
		{"a\n-b", `hosts:2: host name "-b" must not start with '-'`},
		{"a:0", `hosts:1: slot count must be at least 1`},
		{"a:x", `hosts:1: slot count "x" is not`},
		{":2", `hosts:1: empty host name`},
		{"a,b", `hosts:1: host name "a,b" contains ','`},
		{"a slots=1048576\na", `hosts:2: host a: slots add up to 1048577`},
		{"a slots=99999999", `hosts:1: slots 99999999 is more than the limit of 1048576`},
		{"a[1-200000]\nb[1-200000] # each bounded, not both", `hosts:2: more than 262144 hosts in all`},
		{"a\n" + strings.Repeat("x", 70000), `hosts:2: line is longer than 65536 bytes`},
	}
	for _, tt := range tests {
		_, err := ParseHostfile(strings.NewReader(tt.in), "hosts")
		if err == nil {
			t.Errorf("ParseHostfile(%q) succeeded, want error %q", tt.in, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseHostfile(%.40q) error = %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestParseHostfileReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ParseHostfile(iotest.ErrReader(boom), "hosts")
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "hosts: ") {
		t.Errorf("got %v, want hosts: boom", err)
	}
}

func TestReadHostfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostfile")
	if err := os.WriteFile(path, []byte("a slots=2\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHostfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Host{{"a", 2, 0}, {"b", 1, 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	if err := os.WriteFile(path, []byte("a slots=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHostfile(path); err == nil || !strings.HasPrefix(err.Error(), path+":1: ") {
		t.Errorf("got %v, want an error starting with %s:1:", err, path)
	}

	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := ReadHostfile(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}
