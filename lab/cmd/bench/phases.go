package main

import (
	"strings"
	"time"

	"prsh/daemon/protocol"
)

// launchTimes are the seconds from mpirun's start at which one launch of
// ours reached each milestone (phase 1, phase 2, ranks started, ranks
// exited), as its --report-launch-times line says; -1 where it did not.
type launchTimes [protocol.NumMilestones]float64

const launchTimesPrefix = "mpirun: launch times: "

// parseLaunchTimes finds mpirun's line of launch times in its stderr: one
// "NAME 1.234s" or "NAME never" per milestone, comma-separated, in the
// order of protocol.MilestoneNames.
func parseLaunchTimes(stderr string) launchTimes {
	var t launchTimes
	for k := range t {
		t[k] = -1
	}
	for _, line := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(line, launchTimesPrefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, ", ")
		for k := range min(len(parts), len(t)) {
			at, ok := strings.CutPrefix(parts[k], protocol.MilestoneNames[k]+" ")
			if d, err := time.ParseDuration(at); ok && err == nil {
				t[k] = d.Seconds()
			}
		}
	}
	return t
}

// milestone is the median over a point's runs of when milestone k was
// reached; -1 when no run reached it.
func (p benchPoint) milestone(k int) float64 {
	var at []float64
	for _, t := range p.times {
		if t[k] >= 0 {
			at = append(at, t[k])
		}
	}
	if len(at) == 0 {
		return -1
	}
	return median(at)
}
