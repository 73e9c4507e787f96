package job

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpandHostRange(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"node", []string{"node"}},
		{"node[001-003]", []string{"node001", "node002", "node003"}},
		{"n[8-10]", []string{"n8", "n9", "n10"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"n[1,4-5,3]", []string{"n1", "n4", "n5", "n3"}},
		{"rack[1-2]-n[01-02]", []string{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}},
		{"[1-2]x", []string{"1x", "2x"}},
		{"u@n[1-2].lan", []string{"u@n1.lan", "u@n2.lan"}},
	}
	for _, tt := range tests {
		got, err := ExpandHostRange(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExpandHostRange(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandHostRangeErrors(t *testing.T) {
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
		_, err := ExpandHostRange(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ExpandHostRange(%q) error %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestSplitHostList(t *testing.T) {
	got, err := SplitHostList("a[1,3],b:2,c[1-2]-d[3,4]")
	want := []string{"a[1,3]", "b:2", "c[1-2]-d[3,4]"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("SplitHostList = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"a[[1]]", "a]", "a[1"} {
		if _, err := SplitHostList(bad); err == nil {
			t.Errorf("SplitHostList(%q) succeeded", bad)
		}
	}
}

// TestHostRangesInLists: ranges work in -H (slots for every host, repeats
// adding) and in hostfiles (keywords for every host).
func TestHostRangesInLists(t *testing.T) {
	got, err := ParseHostList("n[1-2]:2,n[2-3]")
	want := []Host{{"n1", 2, 0}, {"n2", 3, 0}, {"n3", 1, 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseHostList = %v, %v; want %v", got, err, want)
	}
	got, err = ParseHostfile(strings.NewReader("n[01-02] slots=4 max_slots=8\n"), "hf")
	want = []Host{{"n01", 4, 8}, {"n02", 4, 8}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseHostfile = %v, %v; want %v", got, err, want)
	}
	if _, err := ParseHostList("n[1-2];x"); err == nil || !strings.Contains(err.Error(), `host list entry "n[1-2];x": host name "n1;x" contains ';'`) {
		t.Errorf("bad name in a range: %v", err)
	}
}
