package job

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// ParseHostfile parses an Open MPI-style hostfile. Each line names one
// host or a range of them (node[01-16]), optionally followed by slots=N
// and max_slots=N, or is written Hydra style as host:N. '#' starts a comment; blank lines are ignored.
// Repeated hosts accumulate slots. name is used only in error messages,
// which read "FILE:LINE: message". A file with no hosts is an error.
func ParseHostfile(r io.Reader, name string) ([]Host, error) {
	var set hostSet
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		hosts, err := parseHostfileLine(sc.Text())
		if err == nil {
			err = set.addAll(hosts)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line is longer than %d bytes", name, line+1, bufio.MaxScanTokenSize)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(set.hosts) == 0 {
		return nil, fmt.Errorf("%s: no hosts", name)
	}
	return set.hosts, nil
}

// ReadHostfile reads and parses the hostfile at path.
func ReadHostfile(path string) ([]Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseHostfile(f, path)
}

// spacedEquals matches "slots = 4", which Open MPI's lexer also accepts.
var spacedEquals = regexp.MustCompile(`\s*=\s*`)

// parseHostfileLine parses one line: the hosts it names (several for a
// range such as node[1-4]), none for blank and comment lines.
func parseHostfileLine(text string) ([]Host, error) {
	text, _, _ = strings.Cut(text, "#")
	fields := strings.Fields(spacedEquals.ReplaceAllString(text, "="))
	if len(fields) == 0 {
		return nil, nil
	}
	if strings.Contains(fields[0], "=") {
		return nil, fmt.Errorf("line starts with %q; expected a host name first", fields[0])
	}
	hosts, counted, err := parseHostEntry(fields[0])
	if err != nil {
		return nil, err
	}
	h := hosts[0]
	if err := parseKeywords(&h, counted, fields[1:]); err != nil {
		return nil, err
	}
	for i := range hosts {
		hosts[i].Slots, hosts[i].MaxSlots = h.Slots, h.MaxSlots
	}
	return hosts, nil
}

// parseKeywords applies the key=value fields after the host name. The
// synonyms are the ones Open MPI's hostfile lexer accepts.
func parseKeywords(h *Host, counted bool, fields []string) error {
	maxed := false
	for _, f := range fields {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("unexpected %q after the host name (want slots=N or max_slots=N; one host per line)", f)
		}
		var err error
		switch key = strings.ToLower(key); key {
		case "slots", "count", "cpu":
			err = setCount(&h.Slots, &counted, key, val)
		case "max_slots", "max-slots", "slots_max", "slots-max":
			err = setCount(&h.MaxSlots, &maxed, key, val)
		default:
			err = fmt.Errorf("unknown keyword %q (want slots or max_slots)", key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// setCount parses val into *dst unless the line already set it: a line
// saying slots twice is more likely a mistake than an intent to add.
func setCount(dst *int, seen *bool, key, val string) error {
	if *seen {
		return fmt.Errorf("%s given twice on one line", key)
	}
	n, err := parseCount(val)
	if err != nil {
		return fmt.Errorf("%s %w", key, err)
	}
	*dst, *seen = n, true
	return nil
}
