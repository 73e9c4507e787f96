package hostrange

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"node", []string{"node"}},
		{"node[001-003]", []string{"node001", "node002", "node003"}},
		{"n[8-10]", []string{"n8", "n9", "n10"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"n[0098-101]", []string{"n0098", "n0099", "n0100", "n0101"}},
		{"n[99-0100]", []string{"n99", "n100"}},
		{"n[1,4-5,3]", []string{"n1", "n4", "n5", "n3"}},
		{"rack[1-2]-n[01-02]", []string{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}},
		{"[1-2]x", []string{"1x", "2x"}},
		{"u@n[1-2].lan", []string{"u@n1.lan", "u@n2.lan"}},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"n[]", "empty brackets"},
		{"n[1-", "'[' without ']'"},
		{"n]1[", "']' without '['"},
		{"n[3-1]", `range "3-1" runs backwards`},
		{"n[a-b]", `"a-b" in brackets: want numbers`},
		{"n[1-2-3]", `"1-2-3" in brackets`},
		{"n[1,,2]", `"" in brackets`},
		{"n[0-999999999]", "expands to more than 262144 hosts"},
		{"n[0-9999]m[0-9999]", "expands to more than 262144 hosts"},
		{"n[1234567890]", "more than 9 digits"},
	}
	for _, tt := range tests {
		_, err := Expand(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Expand(%q) error %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestSplit(t *testing.T) {
	got, err := Split("a[1,3],b:2,c[1-2]-d[3,4]")
	want := []string{"a[1,3]", "b:2", "c[1-2]-d[3,4]"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"a[[1]]", "a]", "a[1"} {
		if _, err := Split(bad); err == nil {
			t.Errorf("Split(%q) succeeded", bad)
		}
	}
}

// FuzzExpand checks that no host expression panics the expander
// or escapes its bound, and that a plain name is itself.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"n", "n[1-3]", "n[001-064]", "r[1-2]-n[01,03]", "n[", "n]", "n[3-1]", "n[0-999999]", "[1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := Expand(s)
		if err != nil {
			if names != nil {
				t.Fatalf("Expand(%q) = %v with error %v", s, names, err)
			}
			return
		}
		if len(names) == 0 || len(names) > MaxHosts {
			t.Fatalf("Expand(%q) gave %d names", s, len(names))
		}
		if !strings.ContainsAny(s, "[]") && (len(names) != 1 || names[0] != s) {
			t.Fatalf("Expand(%q) = %q, want the name itself", s, names)
		}
	})
}
