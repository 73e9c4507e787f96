package need

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A shell run as `sh -c STRING` runs the commands STRING names, and
// needs the server only if one of them may, when each can be told: its
// name is written out (no $, no glob), it is a builtin that runs nothing
// or a program looked at as any other (its arguments too), and no
// argument that may expand goes to a program that could run it. Anything
// else boots: command substitution, here-documents, eval, sourcing,
// functions, case, a name not found. A script file still boots.
var (
	// shells read no start-up file when not interactive (bash: unless
	// BASH_ENV is set, which the checker looks at).
	shells = []string{"sh", "dash", "bash"}
	// builtins run nothing they are given (trap, eval, . and the like are
	// left out on purpose: they are not found as programs, so they boot).
	builtins = []string{"echo", "printf", "test", "[", "exit", "return", "true", "false", ":", "cd", "read",
		"set", "export", "unset", "shift", "wait", "kill", "umask", "local", "break", "continue", "readonly"}
	// reserved words and prefixes that come before a command's name.
	reserved = []string{"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "exec", "command"}
	// quiet programs run none of their arguments, which may then expand.
	quiet = []string{"sleep", "touch", "cat", "mkdir", "rm", "hostname", "date", "ls", "cut", "head", "tail",
		"wc", "cp", "mv", "ln", "stat", "id", "uname", "basename", "dirname", "grep", "tee"}
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// shellString is the command string of `SHELL -c STRING …`, if argv is one.
func (c *checker) shellString(file string, argv []string) (string, bool) {
	if len(argv) < 3 || argv[1] != "-c" {
		return "", false
	}
	names := []string{filepath.Base(file)}
	if real, err := filepath.EvalSymlinks(file); err == nil {
		names = append(names, filepath.Base(real))
	}
	for _, n := range names {
		if !slices.Contains(shells, n) || (n == "bash" && c.bashEnv) {
			return "", false
		}
	}
	return argv[2], true
}

// script is why a shell's command string may use PMIx, if it may.
func (c *checker) script(s string, depth int) (string, bool) {
	cmds, ok := scriptCommands(s)
	if !ok {
		return "a shell command string that runs what cannot be told", true
	}
	for _, words := range cmds {
		if why, boot := c.command(words, depth); boot {
			return why, true
		}
	}
	return "", false
}

// command is why one simple command may use PMIx, if it may.
func (c *checker) command(words []word, depth int) (string, bool) {
	for len(words) > 0 && (slices.Contains(reserved, words[0].text) || assignment.MatchString(words[0].text)) {
		words = words[1:]
	}
	switch {
	case len(words) == 0, words[0].text == "for": // for's words are values, its body is a command of its own
		return "", false
	case words[0].expands:
		return "a shell command whose name is not written out", true
	case slices.Contains(builtins, words[0].text):
		return "", false
	case depth+1 > maxDepth:
		return "programs nested too deep", true
	}
	argv := make([]string, len(words))
	for i, w := range words {
		if w.expands && !slices.Contains(quiet, filepath.Base(words[0].text)) {
			return words[0].text + ": an argument that may expand to a program", true
		}
		argv[i] = w.text
	}
	return c.program(argv, depth+1)
}

// word is one word of a shell command, its quotes removed.
type word struct {
	text    string
	expands bool // holds $ outside single quotes, or a glob character unquoted
}

// scriptCommands splits a shell command string into its simple commands'
// words, redirections left out; ok is false for what it does not read.
func scriptCommands(s string) (cmds [][]word, ok bool) {
	var t tokenizer
	for i := 0; i < len(s); i++ {
		next, ok := t.char(s, i)
		if !ok {
			return nil, false
		}
		i = next
	}
	t.endCommand()
	return t.cmds, true
}

type tokenizer struct {
	cmds     [][]word
	cmd      []word
	cur      strings.Builder
	inWord   bool
	expands  bool
	redirect bool // the next word is a redirection's target
}

// char reads the character at i (and what it opens) and returns the index
// of the last character it took.
func (t *tokenizer) char(s string, i int) (int, bool) {
	switch ch := s[i]; ch {
	case '\'':
		j := strings.IndexByte(s[i+1:], '\'')
		if j < 0 {
			return i, false
		}
		t.add(s[i+1 : i+1+j])
		return i + 1 + j, true
	case '"':
		return t.doubleQuoted(s, i)
	case '\\':
		if i+1 < len(s) && s[i+1] != '\n' {
			t.add(s[i+1 : i+2])
		}
		return i + 1, true
	case '`':
		return i, false
	case '$':
		if strings.HasPrefix(s[i:], "$(") {
			return i, false
		}
		t.expands = true
	case '*', '?', '[':
		t.expands = t.expands || !(ch == '[' && !t.inWord && (i+1 == len(s) || s[i+1] == ' '))
	case '#':
		if !t.inWord {
			if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
				return i + j - 1, true
			}
			return len(s), true
		}
	case ';', '&', '|', '(', ')', '\n':
		t.endCommand()
		return i, true
	case '<', '>':
		return t.redirection(s, i)
	case ' ', '\t':
		t.endWord()
		return i, true
	}
	t.add(s[i : i+1])
	return i, true
}

// doubleQuoted reads "…" from i: $ expands, substitutions are not read.
func (t *tokenizer) doubleQuoted(s string, i int) (int, bool) {
	t.inWord = true
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '"':
			return j, true
		case '\\':
			j++
		case '`':
			return j, false
		case '$':
			if strings.HasPrefix(s[j:], "$(") {
				return j, false
			}
			t.expands = true
		}
		if j < len(s) {
			t.cur.WriteByte(s[j])
		}
	}
	return len(s), false
}

// redirection skips the operator at i (an fd number before it is its
// own); the word after it is its target, not an argument.
func (t *tokenizer) redirection(s string, i int) (int, bool) {
	if strings.HasPrefix(s[i:], "<<") || strings.HasPrefix(s[i:], "<(") || strings.HasPrefix(s[i:], ">(") {
		return i, false
	}
	if t.inWord && !t.expands && strings.Trim(t.cur.String(), "0123456789") == "" {
		t.cur.Reset()
		t.inWord = false
	}
	t.endWord()
	for i+1 < len(s) && strings.IndexByte(">&|", s[i+1]) >= 0 {
		i++
	}
	t.redirect = true
	return i, true
}

func (t *tokenizer) add(s string) {
	t.cur.WriteString(s)
	t.inWord = true
}

func (t *tokenizer) endWord() {
	if t.inWord {
		if t.redirect {
			t.redirect = false
		} else {
			t.cmd = append(t.cmd, word{t.cur.String(), t.expands})
		}
	}
	t.cur.Reset()
	t.inWord, t.expands = false, false
}

func (t *tokenizer) endCommand() {
	t.endWord()
	t.redirect = false
	if len(t.cmd) > 0 {
		t.cmds = append(t.cmds, t.cmd)
	}
	t.cmd = nil
}
