package early

// What this package needs of strings and strconv, written out: importing
// them would put its init after unicode's, and so after time, os and the
// crypto packages (Go initializes packages in import-path order, each
// once its imports are), where the guard's start gains less.

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// cut is strings.Cut on a byte.
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func split(s string, sep byte) []string {
	var parts []string
	for {
		before, after, found := cut(s, sep)
		parts = append(parts, before)
		if !found {
			return parts
		}
		s = after
	}
}

func trimDashes(s string) string {
	for len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	return s
}

func trimNul(s string) string {
	if len(s) > 0 && s[len(s)-1] == 0 {
		return s[:len(s)-1]
	}
	return s
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
