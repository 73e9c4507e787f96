package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kevinburke/ssh_config"
)

// SystemConfigFile is where OpenSSH keeps the system-wide client config.
const SystemConfigFile = "/etc/ssh/ssh_config"

// maxIncludeDepth bounds Include nesting, as OpenSSH does (16); it also
// stops a file that includes itself.
const maxIncludeDepth = 16

// configFile is one parsed OpenSSH client config file, with the files its
// Include lines name, parsed in turn.
type configFile struct {
	path     string
	cfg      *ssh_config.Config
	includes map[*ssh_config.Include][]*configFile
	matches  map[string]matchRule // by the tag its block's Host line has
	execs    execResults
}

// sshConfig is the files ssh reads, in order: the user's, then the
// system's. The first value found wins, as in OpenSSH.
type sshConfig []*configFile

// setting is one "Key value" line of a config file.
type setting struct {
	key, value string
	file       string
	line       int
}

// where is "FILE:LINE".
func (s setting) where() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// loadConfigs reads the user's file, then the system's. user "" means
// ~/.ssh/config if it exists; system "" means SystemConfigFile if it
// exists, "none" no system file. Files named explicitly must exist.
func loadConfigs(user, system string) (sshConfig, error) {
	var cfg sshConfig
	if user == "" {
		if home, err := os.UserHomeDir(); err == nil {
			user = filepath.Join(home, ".ssh", "config")
			if _, err := os.Stat(user); err != nil {
				user = ""
			}
		}
	}
	if user != "" {
		f, err := parseConfigFile(user, false, 0)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, f)
	}
	switch system {
	case "none":
		return cfg, nil
	case "":
		if _, err := os.Stat(SystemConfigFile); err != nil {
			return cfg, nil
		}
		system = SystemConfigFile
	}
	f, err := parseConfigFile(system, true, 0)
	if err != nil {
		return nil, err
	}
	return append(cfg, f), nil
}

// parseConfigFile reads one file and those it includes. The parser knows
// no Match lines: each becomes a Host line with a tag of its own (see
// sshmatch.go), and lookup evaluates its rule.
func parseConfigFile(path string, system bool, depth int) (*configFile, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("ssh config %s: Include nested deeper than %d files", path, maxIncludeDepth)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssh config: %w", err)
	}
	text, matches, err := tagMatchLines(path, text)
	if err != nil {
		return nil, err
	}
	cfg, err := ssh_config.DecodeBytes(text)
	if err != nil {
		// The parser reads included files too, and its errors do not say
		// which file: an included file's own check names it.
		if ierr := checkIncludes(text, system, depth); ierr != nil {
			return nil, ierr
		}
		return nil, fmt.Errorf("ssh config %s: %w", path, err)
	}
	f := &configFile{path: path, cfg: cfg, includes: map[*ssh_config.Include][]*configFile{}, matches: matches}
	for _, inc := range includeNodes(cfg) {
		_, args := splitConfigLine(inc.String())
		for _, name := range includedFiles(args, system) {
			sub, err := parseConfigFile(name, system, depth+1)
			if err != nil {
				return nil, err
			}
			f.includes[inc] = append(f.includes[inc], sub)
		}
	}
	return f, nil
}

// tagMatchLines reads each Match line's rule and puts a Host line with
// its tag in its place; lines keep their numbers. A rule the native client
// cannot evaluate is refused with its file and line.
func tagMatchLines(path string, text []byte) ([]byte, map[string]matchRule, error) {
	lines := bytes.SplitAfter(text, []byte("\n"))
	matches := map[string]matchRule{}
	for i, line := range lines {
		key, value := splitConfigLine(string(line))
		if !strings.EqualFold(key, "Match") {
			continue
		}
		rule, err := parseMatch(value)
		if err != nil {
			return nil, nil, unsupportedError(setting{key: key, value: value, file: path, line: i + 1}, "", err.Error())
		}
		tag := fmt.Sprintf("%s%d", matchTag, i+1)
		matches[tag] = rule
		lines[i] = []byte("Host " + tag + "\n")
	}
	return bytes.Join(lines, nil), matches, nil
}

// matchesAll: "all", or "final all", which OpenSSH applies in a last
// pass over the files: with first-value-wins and no host name
// canonicalisation, the same as "all" where it stands (RHEL's system file
// brings its crypto policy so).
func matchesAll(criteria string) bool {
	f := strings.Fields(strings.ToLower(criteria))
	return slices.Equal(f, []string{"all"}) || slices.Equal(f, []string{"final", "all"})
}

// splitConfigLine returns a line's keyword and the rest, as OpenSSH
// splits them (on white space or one '='); comments give "".
func splitConfigLine(line string) (key, value string) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", ""
	}
	i := strings.IndexAny(line, " \t=")
	if i < 0 {
		return line, ""
	}
	value = strings.TrimLeft(line[i:], " \t")
	value = strings.TrimPrefix(value, "=")
	return line[:i], strings.TrimSpace(value)
}

// checkIncludes parses the files that text includes, for their errors.
func checkIncludes(text []byte, system bool, depth int) error {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		key, args := splitConfigLine(sc.Text())
		if !strings.EqualFold(key, "Include") {
			continue
		}
		for _, name := range includedFiles(args, system) {
			if _, err := parseConfigFile(name, system, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// includeNodes lists the Include lines of cfg, in order.
func includeNodes(cfg *ssh_config.Config) []*ssh_config.Include {
	var incs []*ssh_config.Include
	for _, h := range cfg.Hosts {
		for _, n := range h.Nodes {
			if inc, ok := n.(*ssh_config.Include); ok {
				incs = append(incs, inc)
			}
		}
	}
	return incs
}

// includedFiles expands an Include line's globs as OpenSSH does: relative
// names are under ~/.ssh for the user's files, /etc/ssh for the system's.
// (The parser keeps the names to itself: callers read them back from the
// line.)
func includedFiles(args string, system bool) []string {
	home, _ := os.UserHomeDir()
	var files []string
	for _, pattern := range strings.Fields(args) {
		pattern = expandTilde(pattern, home)
		if !filepath.IsAbs(pattern) {
			dir := filepath.Join(home, ".ssh")
			if system {
				dir = filepath.Dir(SystemConfigFile)
			}
			pattern = filepath.Join(dir, pattern)
		}
		matches, _ := filepath.Glob(pattern) // a bad pattern matches nothing, as in OpenSSH
		files = append(files, matches...)
	}
	return files
}

// lookup returns every line that gives q one of keys, in the order ssh
// reads them: the first one is the value in force.
func (c sshConfig) lookup(q query, keys ...string) []setting {
	var out []setting
	var st matchState
	for _, f := range c {
		f.walk(q, &st, func(s setting) {
			if containsFold(keys, s.key) {
				out = append(out, s)
			}
		})
	}
	return out
}

// walk visits the lines that apply to q in order: those of the Host
// blocks that match its alias and of the Match blocks whose rule holds
// after the lines before them.
func (f *configFile) walk(q query, st *matchState, visit func(setting)) {
	for _, h := range f.cfg.Hosts {
		if !f.applies(h, q, *st) {
			continue
		}
		for _, n := range h.Nodes {
			switch n := n.(type) {
			case *ssh_config.KV:
				s := setting{key: n.Key, value: n.Value, file: f.path, line: n.Pos().Line}
				st.saw(s)
				visit(s)
			case *ssh_config.Include:
				for _, sub := range f.includes[n] {
					sub.walk(q, st, visit)
				}
			}
		}
	}
}

// applies says whether a block is read for q: a Match block by its rule,
// a Host block by its patterns.
func (f *configFile) applies(h *ssh_config.Host, q query, st matchState) bool {
	if len(h.Patterns) == 1 {
		if rule, ok := f.matches[h.Patterns[0].String()]; ok {
			return rule.holds(q, st, &f.execs)
		}
	}
	return h.Matches(q.alias)
}

func containsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}

// first is the setting in force for key, if any.
func (c sshConfig) first(q query, key string) (setting, bool) {
	all := c.lookup(q, key)
	if len(all) == 0 {
		return setting{}, false
	}
	return all[0], true
}

// get is the value in force for key, "" if none.
func (c sshConfig) get(q query, key string) string {
	s, _ := c.first(q, key)
	return s.value
}

// getAll is every value given for key: IdentityFile and SendEnv add up.
func (c sshConfig) getAll(q query, key string) []string {
	var vs []string
	for _, s := range c.lookup(q, key) {
		vs = append(vs, s.value)
	}
	return vs
}

// unsupportedError is the one line about a setting the native client
// cannot honour: where it is, and the way out.
func unsupportedError(s setting, host, why string) error {
	forHost := ""
	if host != "" {
		forHost = " for " + host
	}
	line := strings.TrimSpace(s.key + " " + s.value)
	return fmt.Errorf("ssh config %s: %s%s: mpirun's own ssh client %s; use the system ssh: --launch-agent 'ssh %%h'",
		s.where(), line, forHost, why)
}
