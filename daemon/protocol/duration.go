package protocol

import "strconv"

// formatMS words a duration in milliseconds as Go's time.Duration does
// ("1.5s", "2m0s", "500ms"): the machine may not import time, and the
// user's flags are written that way.
func formatMS(ms int64) string {
	if ms < 0 {
		return "-" + formatMS(-ms)
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
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		sec += "." + f
	}
	switch {
	case h > 0:
		return strconv.FormatInt(h, 10) + "h" + strconv.FormatInt(m, 10) + "m" + sec + "s"
	case m > 0:
		return strconv.FormatInt(m, 10) + "m" + sec + "s"
	}
	return sec + "s"
}
