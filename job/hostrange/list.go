package hostrange

import (
	"encoding/json"
	"fmt"
	"strings"

	"prsh/internal/jsonwire"
)

// List is a list of host names, repeats and empty names allowed, that
// travels in JSON as one string of ranges, as Expand reads them: names
// that differ only in a number counting up by one, zero-padded to the
// first one's width, are one range, so that "login1,node[0001-4096]" is
// 4,097 names. Every daemon receives the job's host list (the node of each
// daemon id) before it spawns, so a regular cluster's costs each daemon a
// few bytes, not O(n). A list the syntax cannot hold (empty, longer than
// maxWireHosts, or with a name holding '[', ']' or ',') is a JSON array
// of strings, as a []string would be; either form decodes.
type List []string

const (
	// maxWireHosts bounds what the string form may expand to: mpirun's
	// host and the most nodes a job can have.
	maxWireHosts = MaxHosts + 1
	// maxRangeLen is the longest host name mpirun takes (job's
	// maxNameLen), and the longest range the string form may hold: with
	// maxWireHosts, it bounds the memory a decoded list takes.
	maxRangeLen = 512
)

// MarshalJSON writes the string form, or the array if it cannot hold h.
func (h List) MarshalJSON() ([]byte, error) {
	if s, ok := compress(h); ok {
		return json.Marshal(s)
	}
	return json.Marshal([]string(h))
}

// UnmarshalJSON reads either form; null is no list.
func (h *List) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return json.Unmarshal(b, (*[]string)(h))
	}
	s, err := jsonwire.String(b)
	if err != nil {
		return err
	}
	names, err := expandList(s)
	if err != nil {
		return fmt.Errorf("host list: %w", err)
	}
	*h = names
	return nil
}

// compress writes names as ranges and single names, separated by
// commas, or says it cannot.
func compress(names []string) (string, bool) {
	if len(names) == 0 || len(names) > maxWireHosts {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(names); i++ {
		prefix, lo, suffix, ok := splitNumber(names[i])
		if !ok {
			return "", false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		hi, n := countUp(names[i+1:], prefix, lo, suffix)
		if n == 0 {
			b.WriteString(names[i])
		} else {
			fmt.Fprintf(&b, "%s[%s-%s]%s", prefix, lo, hi, suffix)
		}
		i += n
	}
	return b.String(), true
}

// splitNumber splits a name around its last run of digits, its number,
// and says whether the syntax can hold it.
func splitNumber(name string) (prefix, digits, suffix string, ok bool) {
	start, end := 0, 0
	for k := 0; k < len(name); k++ {
		switch c := name[k]; {
		case c == '[' || c == ']' || c == ',':
			return "", "", "", false
		case isDigit(c):
			if k == 0 || !isDigit(name[k-1]) {
				start = k
			}
			end = k + 1
		}
	}
	return name[:start], name[start:end], name[end:], true
}

// countUp is how many of names continue a range from prefix, lo, suffix:
// the same prefix and suffix around numbers that count up by one from lo,
// at lo's width at least (node8, node9, node10 are one range, as are
// node098, node099, node100; node09, node010 are not), and its last
// number. A range holds at most what one Expand may return, and stays
// within maxRangeLen.
func countUp(names []string, prefix, lo, suffix string) (hi string, n int) {
	if lo == "" || len(lo) > maxDigits || len(prefix)+len(suffix)+len("[-]")+2*maxDigits > maxRangeLen {
		return "", 0
	}
	digits := []byte(lo)
	for ; n < len(names) && n+1 < MaxHosts; n++ {
		digits = increment(digits)
		next := names[n]
		if len(digits) > maxDigits || len(next) != len(prefix)+len(digits)+len(suffix) ||
			next[len(prefix):len(prefix)+len(digits)] != string(digits) ||
			!strings.HasPrefix(next, prefix) || !strings.HasSuffix(next, suffix) {
			break
		}
		hi = next[len(prefix) : len(prefix)+len(digits)]
	}
	return hi, n
}

// expandList reads the string form. It refuses more than maxWireHosts
// names, and ranges longer than maxRangeLen, which bounds the memory the
// names take whatever the input.
func expandList(s string) (List, error) {
	// Each comma adds a name at least: refuse before splitting.
	if strings.Count(s, ",") >= maxWireHosts {
		return nil, fmt.Errorf("more than %d names", maxWireHosts)
	}
	items, err := Split(s)
	if err != nil {
		return nil, err
	}
	names := make(List, 0, len(items))
	for _, item := range items {
		if !strings.Contains(item, "[") {
			names = append(names, item)
			continue
		}
		if len(item) > maxRangeLen {
			return nil, fmt.Errorf("range %.32q... is longer than %d characters", item, maxRangeLen)
		}
		expanded, err := Expand(item)
		if err != nil {
			return nil, err
		}
		if len(names)+len(expanded) > maxWireHosts {
			return nil, fmt.Errorf("more than %d names", maxWireHosts)
		}
		names = append(names, expanded...)
	}
	return names, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
