package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Match blocks of an ssh config, evaluated as OpenSSH does for the
// criteria the native client can know: all, host, originalhost, user,
// localuser and exec, each negated by a leading '!'. The others
// (canonical, tagged, address, localaddress, localport, rdomain, final
// with more than all) are refused where they stand.

// matchTag starts the Host pattern that stands for a Match line for the
// parser, which knows only Host blocks; '%' is in no host name.
const matchTag = "%match"

// matchRule is one Match line's criteria, all of which must hold.
type matchRule []criterion

type criterion struct {
	name   string // lower case
	negate bool
	arg    string // a pattern list, or exec's command
}

// query is what ssh was asked to reach: the name as given and the user
// from user@host ("" if none).
type query struct{ alias, user string }

// matchState is what the lines read so far set, first value winning,
// which host, user and exec criteria see (as in OpenSSH's first pass).
type matchState struct{ hostname, user, port string }

func (st *matchState) saw(s setting) {
	var v *string
	switch strings.ToLower(s.key) {
	case "hostname":
		v = &st.hostname
	case "user":
		v = &st.user
	case "port":
		v = &st.port
	default:
		return
	}
	if *v == "" {
		*v = s.value
	}
}

// parseMatch reads a Match line's criteria; an error ends the sentence
// "mpirun's own ssh client …".
func parseMatch(value string) (matchRule, error) {
	words, err := splitQuoted(value)
	if err != nil {
		return nil, fmt.Errorf("cannot read this: %w", err)
	}
	if matchesAll(value) {
		return matchRule{{name: "all"}}, nil
	}
	var rule matchRule
	for i := 0; i < len(words); i++ {
		c := criterion{name: strings.ToLower(words[i])}
		c.name, c.negate = strings.CutPrefix(c.name, "!")
		switch c.name {
		case "host", "originalhost", "user", "localuser", "exec":
			if i+1 == len(words) {
				return nil, fmt.Errorf("finds no argument for %s", c.name)
			}
			i++
			c.arg = words[i]
			if c.name == "exec" {
				if _, err := expandTokens(c.arg, execTokens(query{}, matchState{})); err != nil {
					return nil, fmt.Errorf("cannot run this exec: %w", err)
				}
			}
		case "all":
			return nil, errors.New("cannot evaluate all beside other criteria")
		default:
			return nil, fmt.Errorf("cannot evaluate %s", c.name)
		}
		rule = append(rule, c)
	}
	if len(rule) == 0 {
		return nil, errors.New("finds no criteria")
	}
	return rule, nil
}

// holds evaluates the rule for q after the lines that set st. As OpenSSH
// does, exec runs only while the criteria before it hold.
func (r matchRule) holds(q query, st matchState, execs *execResults) bool {
	for _, c := range r {
		var ok bool
		switch c.name {
		case "all":
			ok = true
		case "host":
			ok = matchList(c.arg, matchHostname(q, st), true)
		case "originalhost":
			ok = matchList(c.arg, q.alias, true)
		case "user":
			ok = matchList(c.arg, remoteUser(q, st), false)
		case "localuser":
			ok = matchList(c.arg, localUser(), false)
		case "exec":
			ok = execs.runsTrue(c.arg, q, st)
		}
		if ok == c.negate {
			return false
		}
	}
	return true
}

// matchHostname is the host name in force: HostName so far (its %h the
// alias), else the alias.
func matchHostname(q query, st matchState) string {
	if st.hostname == "" {
		return q.alias
	}
	h, err := expandTokens(st.hostname, map[byte]string{'h': q.alias})
	if err != nil {
		return st.hostname
	}
	return h
}

// remoteUser is the user ssh logs in as: user@host first, then User so
// far, then the local user.
func remoteUser(q query, st matchState) string {
	switch {
	case q.user != "":
		return q.user
	case st.user != "":
		return st.user
	}
	return localUser()
}

// execTokens are the %-tokens of a Match exec command.
func execTokens(q query, st matchState) map[byte]string {
	home, _ := os.UserHomeDir()
	long, _ := os.Hostname()
	short, _, _ := strings.Cut(long, ".")
	port := st.port
	if port == "" {
		port = "22"
	}
	return map[byte]string{
		'h': matchHostname(q, st), 'n': q.alias, 'p': port, 'r': remoteUser(q, st),
		'u': localUser(), 'd': home, 'l': long, 'L': short,
	}
}

// execResults remembers each Match exec command line's outcome: ssh runs
// it once per connection, and a lookup here walks the files once per
// setting.
type execResults struct {
	mu   sync.Mutex
	done map[string]bool
}

// runsTrue runs a Match exec command with the user's shell: it holds if
// the command exits 0.
func (e *execResults) runsTrue(command string, q query, st matchState) bool {
	line, err := expandTokens(command, execTokens(q, st))
	if err != nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if ok, seen := e.done[line]; seen {
		return ok
	}
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	cmd := exec.Command(shell, "-c", line)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, os.Stderr
	ok := cmd.Run() == nil
	if e.done == nil {
		e.done = map[string]bool{}
	}
	e.done[line] = ok
	return ok
}

// matchList applies an OpenSSH pattern list ("a*,!ab,c?"): s matches if
// a pattern matches it and no negated one does. Host names fold case.
func matchList(list, s string, fold bool) bool {
	if fold {
		list, s = strings.ToLower(list), strings.ToLower(s)
	}
	found := false
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if wildcard(neg, s) {
				return false
			}
		} else if wildcard(p, s) {
			found = true
		}
	}
	return found
}

// wildcard matches s against p, where '*' is any run and '?' any one
// character (OpenSSH's patterns: no classes, no escapes).
func wildcard(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if wildcard(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return s == ""
}

// splitQuoted splits on white space, keeping "double quoted" words whole.
func splitQuoted(s string) ([]string, error) {
	var words []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if rest, ok := strings.CutPrefix(s, `"`); ok {
			end := strings.IndexByte(rest, '"')
			if end < 0 {
				return nil, errors.New("unterminated quote")
			}
			words, s = append(words, rest[:end]), rest[end+1:]
			continue
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		words, s = append(words, s[:end]), s[end:]
	}
	return words, nil
}
