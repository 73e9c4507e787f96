package job

import (
	"errors"
	"fmt"
	"strings"

	"prsh/job/hostrange"
)

// Host is one node as the user named it.
type Host struct {
	Name     string // as written, may be "user@host"; never empty
	Slots    int    // > 0 after parsing (default 1 per mention)
	MaxSlots int    // 0 = unlimited
}

// Limits that keep arithmetic and allocations bounded whatever the input.
const (
	// MaxHostSlots caps slots and max_slots of one host. No node has a
	// million cores, and the cap keeps summed slot counts from overflowing.
	MaxHostSlots = 1 << 20
	// MaxRanks caps the size of a job so that a typo in -np cannot make
	// Build allocate gigabytes.
	MaxRanks = 1 << 24
)

// maxNameLen is long enough for any user@fully.qualified.name and short
// enough to keep error messages readable.
const maxNameLen = 512

// checkName rejects names that ssh would misread (a leading '-' is an
// option) or that cannot be a host at all. The error carries no context so
// that callers can prefix the entry or line it came from.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty host name")
	case len(name) > maxNameLen:
		return fmt.Errorf("host name %.32q... is longer than %d characters", name, maxNameLen)
	case name[0] == '-':
		return fmt.Errorf("host name %q must not start with '-'", name)
	}
	for _, c := range name {
		if !isNameChar(c) {
			return fmt.Errorf("host name %q contains %q (use letters, digits, '.', '-', '_' and one '@')", name, c)
		}
	}
	return checkUser(name)
}

// checkUser validates the optional "user@" prefix that ssh understands.
func checkUser(name string) error {
	user, host, found := strings.Cut(name, "@")
	switch {
	case !found:
		return nil
	case user == "":
		return fmt.Errorf("host name %q has no user before '@'", name)
	case host == "":
		return fmt.Errorf("host name %q has no host after '@'", name)
	case strings.Contains(host, "@"):
		return fmt.Errorf("host name %q has more than one '@'", name)
	case host[0] == '-':
		return fmt.Errorf("host name %q: host after '@' must not start with '-'", name)
	}
	return nil
}

// isNameChar allows what DNS names, IPv4 addresses, ssh_config aliases and
// user names commonly use, and nothing a shell or ssh would interpret.
func isNameChar(c rune) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '.' || c == '-' || c == '_' || c == '@'
}

// parseCount parses a slot count. It accepts only plain decimal digits, so
// "+4", " 4" or "0x4" are rejected rather than guessed at.
func parseCount(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a positive whole number", s)
	}
	s = strings.TrimLeft(s, "0")
	switch {
	case s == "":
		return 0, errors.New("must be at least 1")
	case len(s) > 7:
		return 0, fmt.Errorf("%s is more than the limit of %d", s, MaxHostSlots)
	}
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	if n > MaxHostSlots {
		return 0, fmt.Errorf("%d is more than the limit of %d", n, MaxHostSlots)
	}
	return n, nil
}

// checkHost validates a Host that did not come from our parsers.
func checkHost(h Host) error {
	if err := checkName(h.Name); err != nil {
		return err
	}
	switch {
	case h.Slots < 1:
		return fmt.Errorf("host %s: slots must be at least 1 (got %d)", h.Name, h.Slots)
	case h.Slots > MaxHostSlots:
		return fmt.Errorf("host %s: slots=%d is more than the limit of %d", h.Name, h.Slots, MaxHostSlots)
	case h.MaxSlots < 0:
		return fmt.Errorf("host %s: max_slots must not be negative (got %d; 0 means no limit)", h.Name, h.MaxSlots)
	case h.MaxSlots > MaxHostSlots:
		return fmt.Errorf("host %s: max_slots=%d is more than the limit of %d", h.Name, h.MaxSlots, MaxHostSlots)
	}
	return nil
}

// hostSet collects hosts in order of first mention, merging repeats.
type hostSet struct {
	hosts []Host
	index map[string]int
}

// add merges h into the set. A repeated name adds its slots, as Open MPI
// counts "-H a,a" as two slots on a; a later max_slots replaces an earlier
// one because it is the last thing the user said. h must have Slots and
// MaxSlots within MaxHostSlots, so the sum cannot overflow.
func (s *hostSet) add(h Host) error {
	i, seen := s.index[h.Name]
	if !seen {
		if len(s.hosts) >= hostrange.MaxHosts {
			// Each range is bounded, but a list of them could still
			// make gigabytes.
			return fmt.Errorf("more than %d hosts in all", hostrange.MaxHosts)
		}
		if s.index == nil {
			s.index = make(map[string]int)
		}
		s.index[h.Name] = len(s.hosts)
		s.hosts = append(s.hosts, h)
		return checkSlots(h)
	}
	m := &s.hosts[i]
	m.Slots += h.Slots
	if h.MaxSlots > 0 {
		m.MaxSlots = h.MaxSlots
	}
	return checkSlots(*m)
}

// addAll adds hosts in order.
func (s *hostSet) addAll(hosts []Host) error {
	for _, h := range hosts {
		if err := s.add(h); err != nil {
			return err
		}
	}
	return nil
}

// checkSlots checks the slot counts of a host after merging.
func checkSlots(h Host) error {
	switch {
	case h.Slots > MaxHostSlots:
		return fmt.Errorf("host %s: slots add up to %d, more than the limit of %d", h.Name, h.Slots, MaxHostSlots)
	case h.MaxSlots > 0 && h.Slots > h.MaxSlots:
		return fmt.Errorf("host %s: slots=%d exceeds max_slots=%d", h.Name, h.Slots, h.MaxSlots)
	}
	return nil
}
