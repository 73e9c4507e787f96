package agent

import (
	"errors"
	"strings"
)

// Quote POSIX-shell-quotes argv into one command string, as ssh's remote
// command: ssh joins its arguments with spaces and the remote shell splits
// them again, so every word that the shell would change is single-quoted.
// Words made only of safe characters are left as they are, which keeps the
// command readable in logs and ps.
func Quote(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = quoteWord(w, i == 0)
	}
	return strings.Join(words, " ")
}

// quoteWord quotes w if the shell would not read it back literally. A first
// word containing '=' is quoted too, or the shell would take it for a
// variable assignment rather than the command.
func quoteWord(w string, first bool) string {
	if w != "" && isSafe(w) && !(first && strings.Contains(w, "=")) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// isSafe reports whether every byte of w is one the shell takes literally
// anywhere in a word.
func isSafe(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("@%+=:,./_-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// errUnbalanced is returned for a template with an open quote.
var errUnbalanced = errors.New("unbalanced quotes")

// splitWords splits s into words like a simple shell: blanks separate
// words; single quotes keep everything literal; in double quotes a
// backslash escapes only $ ` " \ (as in POSIX); outside quotes a backslash
// escapes any character. There is no expansion of any kind.
func splitWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			continue
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errUnbalanced
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += 1 + end
		case c == '"':
			n, err := readDoubleQuoted(s[i+1:], &cur)
			if err != nil {
				return nil, err
			}
			i += n
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
		default:
			cur.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// readDoubleQuoted copies the inside of a double-quoted string (s starts
// after the opening quote) to b and returns how many bytes it consumed,
// closing quote included.
func readDoubleQuoted(s string, b *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0:
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return 0, errUnbalanced
}

// expandHost replaces %h in word by host and %% by %; any other % escape is
// an error, so that a typo in a template is caught when it is parsed.
func expandHost(word, host string) (string, error) {
	return expandTokens(word, map[byte]string{'h': host})
}
