package job

import (
	"errors"
	"fmt"
	"strings"

	"prsh/job/hostrange"
)

// ParseHostList parses -H / --host values: "a,b,c", "a:4,b", "a,a,b",
// "node[01-16]:4". Repeats add slots, like Open MPI: in "a,a,b" a gets 2.
// Whitespace around names is trimmed; empty entries, counts below 1,
// non-numeric counts and names with spaces or a leading '-' are errors
// naming the entry.
func ParseHostList(s string) ([]Host, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty host list")
	}
	entries, err := hostrange.Split(s)
	if err != nil {
		return nil, fmt.Errorf("host list %w", err)
	}
	var set hostSet
	for _, entry := range entries {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("host list %q has an empty entry", s)
		}
		hosts, _, err := parseHostEntry(entry)
		if err == nil {
			err = set.addAll(hosts)
		}
		if err != nil {
			return nil, fmt.Errorf("host list entry %q: %w", entry, err)
		}
	}
	return set.hosts, nil
}

// parseHostEntry parses "name" or "name:slots", the form shared by -H and
// Hydra-style hostfiles, where name may be a range such as node[1-4]: every
// host it names gets the slots. counted reports whether slots were
// written, so a hostfile line can reject a second slots=.
func parseHostEntry(entry string) (hosts []Host, counted bool, err error) {
	expr, count, counted := strings.Cut(entry, ":")
	slots := 1
	if counted {
		slots, err = parseCount(strings.TrimSpace(count))
		if err != nil {
			return nil, false, fmt.Errorf("slot count %w", err)
		}
	}
	names, err := hostrange.Expand(strings.TrimSpace(expr))
	if err != nil {
		return nil, false, err
	}
	hosts = make([]Host, len(names))
	for i, name := range names {
		if err := checkName(name); err != nil {
			return nil, false, err
		}
		hosts[i] = Host{Name: name, Slots: slots}
	}
	return hosts, counted, nil
}
