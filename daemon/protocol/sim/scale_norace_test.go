//go:build !race

package sim

import "testing"

// TestSimulate100k runs the figure: 100,000 nodes, δ = 32. Its
// time and memory are measured by hand (lab/README.md, Scale); this only checks
// that it completes and ends well. It is left out under the race
// detector (make test), where it would cost minutes, and with -short.
func TestSimulate100k(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	r, err := Simulate(model(100_000, 32), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 0 || r.Phase1 < 0 || r.Started < 0 || r.MpirunExit < 0 || len(r.Left) != 0 {
		t.Errorf("100,000 nodes, δ=32: %+v", r)
	}
}
