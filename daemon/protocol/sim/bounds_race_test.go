//go:build race

package sim

// largestLaunch is the largest n TestLaunchLarge runs. Under the race
// detector a launch of 2000 orteds costs 5 to 30 s of CPU, and 2.5 GB on
// the path: 140 s of CPU in all, nearly as much as the rest of the
// package. Each launch runs on one goroutine, so the detector finds
// nothing at n = 2000 that n = 1000 does not exercise. They run in plain
// go test only, which make test (-race) does not run.
const largestLaunch = 1000
