package compat

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// OlderMapBy and OlderBindTo are Open MPI's older switches, each standing
// for a value of --map-by or --bind-to.
var (
	OlderMapBy  = map[string]string{"bynode": "node", "byslot": "slot"}
	OlderBindTo = map[string]string{"bind-to-core": "core", "bind-to-socket": "socket"}
)

// OlderSpelling is the value of flag (value, set: whether it was given),
// or of the one of olders that is on (on[name]); two that name
// different units are an error.
func OlderSpelling(flag, value string, set bool, olders map[string]string, on map[string]bool) (string, error) {
	from := ""
	if set {
		from = "--" + flag + " " + value
	}
	for _, older := range slices.Sorted(maps.Keys(olders)) {
		if !on[older] {
			continue
		}
		if unit, _, _ := strings.Cut(value, ":"); from != "" && !strings.EqualFold(unit, olders[older]) {
			return "", fmt.Errorf("--%s and %s contradict each other", older, from)
		}
		if from == "" { // an agreeing flag keeps its modifiers (core:overload-allowed)
			value, from = olders[older], "--"+older
		}
	}
	return value, nil
}
