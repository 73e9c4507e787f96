package job

import (
	"reflect"
	"strings"
	"testing"
)

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
