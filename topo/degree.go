package topo

// SpawnTime bounds the time to spawn n daemons below the root along the
// radix tree of the given degree, when every session costs its spawner
// cost before the next one (serially) and then takes hop until the new
// daemon can spawn in turn (latency, start-up, callback). Level k of the
// tree starts once level k-1 is up, and its slowest spawner opens
// min(degree, the level's size) sessions: per level, hop plus that many
// costs. Any unit of time will do.
func SpawnTime(n, degree int, hop, cost int64) int64 {
	if n < 1 {
		return 0
	}
	degree = max(1, min(degree, n))
	var t int64
	level := 1 // spawners on the level above
	for left := n; left > 0; {
		size := min(left, level*degree) // this level's daemons
		t += hop + int64(min(degree, size))*cost
		left -= size
		level = size
	}
	return t
}

// BestDegree is the spawn degree in 1..n whose tree spawns n daemons
// soonest by SpawnTime, the smallest of equals: with no cost per session
// a flat launch (degree n); with a cost c and hop h, about the degree
// where one more child (c) costs what one more level (h + δc) saves.
// It is the rule of mpirun's --spawn-degree auto.
func BestDegree(n int, hop, cost int64) int {
	if n <= 1 {
		return 1
	}
	best, bestTime := n, SpawnTime(n, n, hop, cost)
	for d := 1; d < n; d++ {
		if t := SpawnTime(n, d, hop, cost); t < bestTime {
			best, bestTime = d, t
		}
	}
	return best
}
