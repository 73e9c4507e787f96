package job

import (
	"errors"
	"fmt"
	"strings"
)

// ParseHostList parses -H / --host values: "a,b,c", "a:4,b", "a,a,b".
// Repeats add slots, like Open MPI: in "a,a,b" a gets 2. Whitespace around
// names is trimmed; empty entries, counts below 1, non-numeric counts and
// names with spaces or a leading '-' are errors naming the entry.
func ParseHostList(s string) ([]Host, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty host list")
	}
	var set hostSet
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("host list %q has an empty entry", s)
		}
		h, _, err := parseHostEntry(entry)
		if err == nil {
			err = set.add(h)
		}
		if err != nil {
			return nil, fmt.Errorf("host list entry %q: %w", entry, err)
		}
	}
	return set.hosts, nil
}

// parseHostEntry parses "name" or "name:slots", the form shared by -H and
// Hydra-style hostfiles. counted reports whether slots were written, so a
// hostfile line can reject a second slots=.
func parseHostEntry(entry string) (h Host, counted bool, err error) {
	name, count, counted := strings.Cut(entry, ":")
	h = Host{Name: strings.TrimSpace(name), Slots: 1}
	if err := checkName(h.Name); err != nil {
		return Host{}, false, err
	}
	if counted {
		h.Slots, err = parseCount(strings.TrimSpace(count))
		if err != nil {
			return Host{}, false, fmt.Errorf("slot count %w", err)
		}
	}
	return h, counted, nil
}
