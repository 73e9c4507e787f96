package topo

import "testing"

// TestSpawnTimeLevels: the bound is hop plus the slowest spawner's
// sessions, per level of the tree.
func TestSpawnTimeLevels(t *testing.T) {
	tests := []struct {
		n, degree int
		want      int64
	}{
		{1, 8, 100 + 10},                   // one level, one session
		{8, 8, 100 + 8*10},                 // flat
		{8, 100, 100 + 8*10},               // a degree above n is flat
		{3, 1, 3 * (100 + 10)},             // a chain
		{6, 2, 2 * (100 + 2*10)},           // 2 + 4
		{7, 2, 2*(100+2*10) + (100 + 10)},  // 2 + 4 + 1: the last level's one session
		{13, 3, 2*(100+3*10) + (100 + 10)}, // 3 + 9 + 1
		{1000, 10, 3 * (100 + 10*10)},      // 10 + 100 + 890
	}
	for _, tt := range tests {
		if got := SpawnTime(tt.n, tt.degree, 100, 10); got != tt.want {
			t.Errorf("SpawnTime(%d, δ=%d, hop 100, cost 10) = %d, want %d", tt.n, tt.degree, got, tt.want)
		}
	}
}

// TestBestDegree: free sessions make a flat launch best; costly ones a
// tree; the choice is the minimum of SpawnTime over every degree.
func TestBestDegree(t *testing.T) {
	if d := BestDegree(500, 100, 0); d != 500 {
		t.Errorf("no cost per session: δ=%d for 500 nodes, want flat (500)", d)
	}
	if d := BestDegree(1, 100, 10); d != 1 {
		t.Errorf("one node: δ=%d, want 1", d)
	}
	for _, c := range []struct {
		n         int
		hop, cost int64
	}{{16, 250, 50}, {512, 250, 50}, {100000, 250, 20}, {1000, 100, 1}, {1000, 1000, 10}} {
		d := BestDegree(c.n, c.hop, c.cost)
		best := SpawnTime(c.n, d, c.hop, c.cost)
		for other := 1; other <= c.n; other++ {
			if SpawnTime(c.n, other, c.hop, c.cost) < best {
				t.Fatalf("n=%d hop %d cost %d: chose δ=%d (%d), but δ=%d is sooner", c.n, c.hop, c.cost, d, best, other)
			}
		}
		if d == 1 || d == c.n {
			t.Errorf("n=%d hop %d cost %d: chose δ=%d, a chain or flat, where a tree should win", c.n, c.hop, c.cost, d)
		}
	}
}
