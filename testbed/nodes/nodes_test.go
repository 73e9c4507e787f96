package nodes

import "testing"

// TestIndexInvertsNameAndAddr: a launcher may name a node either way.
func TestIndexInvertsNameAndAddr(t *testing.T) {
	for _, n := range []int{1, 12, 1000, 70000} {
		for _, i := range []int{1, n / 2, n} {
			if i == 0 {
				continue
			}
			if got := Index(Name(i, n), 5, n); got != i {
				t.Errorf("Index(%s) = %d, want %d", Name(i, n), got, i)
			}
			a, err := Addr(5, i)
			if err != nil {
				t.Fatal(err)
			}
			if got := Index(a.String(), 5, n); got != i {
				t.Errorf("Index(%s) = %d, want %d", a, got, i)
			}
		}
	}
	for _, bad := range []string{"node13", "node0", "node013x", "127.4.0.1", "127.5.0.251", "localhost", "10.0.0.1"} {
		if got := Index(bad, 5, 12); got != 0 {
			t.Errorf("Index(%q) = %d, want 0", bad, got)
		}
	}
}
