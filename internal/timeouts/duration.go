package timeouts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Format words a duration in milliseconds as Go's time.Duration does
// ("1.5s", "2m0s", "500ms"): the user's flags are written that way, and
// the pure packages may not import time.
func Format(ms int64) string {
	if ms < 0 {
		return "-" + Format(-ms)
	}
	if ms == 0 {
		return "0s"
	}
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	h, m, s, frac := ms/3600_000, ms/60_000%60, ms/1000%60, ms%1000
	sec := strconv.FormatInt(s, 10)
	if frac > 0 {
		f := strconv.FormatInt(1000+frac, 10)[1:] // three digits
		sec += "." + strings.TrimRight(f, "0")
	}
	switch {
	case h > 0:
		return strconv.FormatInt(h, 10) + "h" + strconv.FormatInt(m, 10) + "m" + sec + "s"
	case m > 0:
		return strconv.FormatInt(m, 10) + "m" + sec + "s"
	}
	return sec + "s"
}

// unitMS is each unit ParseMS reads, longest spelling first.
var unitMS = []struct {
	unit string
	ms   float64
}{{"ms", 1}, {"h", 3600_000}, {"m", 60_000}, {"s", 1000}}

// ParseMS reads a duration such as "1.5s", "2m30s" or "500ms" (the
// spellings time.ParseDuration reads, to the millisecond) as milliseconds.
func ParseMS(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var total float64
	for rest := s; rest != ""; {
		end := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if end < 0 {
			return 0, fmt.Errorf("%q has no unit (ms, s, m or h)", s)
		}
		if end == 0 {
			return 0, fmt.Errorf("%q is not a duration such as 1.5s or 500ms", s)
		}
		n, err := strconv.ParseFloat(rest[:end], 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 1.5s or 500ms", s)
		}
		rest = rest[end:]
		found := false
		for _, u := range unitMS {
			if strings.HasPrefix(rest, u.unit) {
				total += n * u.ms
				rest, found = rest[len(u.unit):], true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("%q has no unit (ms, s, m or h)", s)
		}
	}
	return int64(total + 0.5), nil
}
