package pmix

import (
	"slices"
	"testing"
)

// TestSegmentsOf: the job's variables set the sizes, the last one of a
// name winning; a size below a page or not a number is refused.
func TestSegmentsOf(t *testing.T) {
	got, err := SegmentsOf([]string{"PATH=/bin", "NS_DATA_SEG_SIZE=2097152", "NS_META_SEG_SIZE=8192", "NS_DATA_SEG_SIZE=4194304"})
	if want := (Segments{Meta: 8192, Data: 4 << 20}); err != nil || got != want {
		t.Errorf("got %+v (%v), want %+v", got, err, want)
	}
	if got, err := SegmentsOf(nil); err != nil || got != DefaultSegments {
		t.Errorf("no variables: %+v (%v), want the default", got, err)
	}
	for _, bad := range []string{"NS_DATA_SEG_SIZE=4095", "NS_META_SEG_SIZE=1M", "NS_DATA_SEG_SIZE="} {
		if _, err := SegmentsOf([]string{bad}); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	if env := (Segments{Meta: 4096, Data: 8192}).env(); !slices.Equal(env, []string{"NS_META_SEG_SIZE=4096", "NS_DATA_SEG_SIZE=8192"}) {
		t.Errorf("env %q", env)
	}
}
