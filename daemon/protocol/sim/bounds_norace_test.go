//go:build !race

package sim

// largestLaunch is the largest n TestLaunchLarge runs; see the race
// build's.
const largestLaunch = 2000
