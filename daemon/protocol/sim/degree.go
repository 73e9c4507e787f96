package sim

import (
	"fmt"
	"strconv"
	"strings"

	"prsh/topo"
)

// Spawn degrees a sweep may ask for besides a number: Flat, a launch in
// which mpirun spawns every orted, and Auto, the one topo.BestDegree
// picks for the node count and the model's costs (mpirun's --spawn-degree
// auto).
const (
	Flat = 0
	Auto = -1
)

// Degree is the spawn degree of a run of d (a number, Flat or Auto) on n
// nodes with m's costs.
func (m Model) Degree(d, n int) int {
	switch d {
	case Flat:
		return n
	case Auto:
		return m.AutoDegree(n)
	}
	return d
}

// AutoDegree is mpirun's --spawn-degree auto for the model's costs: a hop
// is the session's latency, the orted's start-up and CPU and its
// callback; a session's cost at its spawner is at least its latency
// shared by the sessions it may open at once.
func (m Model) AutoDegree(n int) int {
	hop := m.SSHLatency + m.Startup + m.OrtedStartCPU(n) + m.Latency
	cost := m.SpawnCost
	if m.MaxSessions > 0 {
		cost = max(cost, m.SSHLatency/int64(m.MaxSessions))
	}
	return topo.BestDegree(n, hop, cost)
}

// DegreeName words d as ParseDegrees reads it.
func DegreeName(d int) string {
	switch d {
	case Flat:
		return "flat"
	case Auto:
		return "auto"
	}
	return strconv.Itoa(d)
}

// DegreeLabel names a run's degree, with the one auto chose.
func DegreeLabel(d, chosen int) string {
	if d == Auto {
		return fmt.Sprintf("auto(%d)", chosen)
	}
	return DegreeName(d)
}

// SplitList flattens repeated and comma-separated values, dropping blanks.
func SplitList(vals ...string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// ParseSizes reads a comma-separated list of positive numbers (node
// counts, say).
func ParseSizes(s string) ([]int, error) { return positiveList(s, false) }

// ParseDegrees reads spawn degrees: positive numbers, flat or auto.
func ParseDegrees(s string) ([]int, error) { return positiveList(s, true) }

func positiveList(s string, degrees bool) ([]int, error) {
	var out []int
	for _, f := range SplitList(s) {
		switch {
		case degrees && f == "flat":
			out = append(out, Flat)
		case degrees && f == "auto":
			out = append(out, Auto)
		default:
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%q is not a positive number", f)
			}
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}
