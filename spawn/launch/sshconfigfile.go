package launch

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

// parseConfigFile reads one file and those it includes. Match lines other
// than "Match all" are refused here: the parser mistakes some of them for
// Host lines, and the native client cannot evaluate the others.
func parseConfigFile(path string, system bool, depth int) (*configFile, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("ssh config %s: Include nested deeper than %d files", path, maxIncludeDepth)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssh config: %w", err)
	}
	if err := checkMatchLines(path, text); err != nil {
		return nil, err
	}
	cfg, err := ssh_config.DecodeBytes(finalAsAll(text))
	if err != nil {
		// The parser reads included files too, and its errors do not say
		// which file: an included file's own check names it.
		if ierr := checkIncludes(text, system, depth); ierr != nil {
			return nil, ierr
		}
		return nil, fmt.Errorf("ssh config %s: %w", path, err)
	}
	f := &configFile{path: path, cfg: cfg, includes: map[*ssh_config.Include][]*configFile{}}
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

// checkMatchLines refuses a Match line the native client cannot evaluate:
// any but "Match all" and "Match final all".
func checkMatchLines(path string, text []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		key, value := splitConfigLine(sc.Text())
		if strings.EqualFold(key, "Match") && !matchesAll(value) {
			return unsupportedError(setting{key: key, value: value, file: path, line: n}, "",
				"cannot evaluate this")
		}
	}
	return nil
}

// matchesAll: "all", or "final all", which OpenSSH applies in a last
// pass over the files: with first-value-wins and no host name
// canonicalisation, the same as "all" where it stands (RHEL's system file
// brings its crypto policy so).
func matchesAll(criteria string) bool {
	f := strings.Fields(strings.ToLower(criteria))
	return slices.Equal(f, []string{"all"}) || slices.Equal(f, []string{"final", "all"})
}

// finalAsAll rewrites "Match final all" as "Match all" for the parser,
// which knows only the latter; lines keep their numbers.
func finalAsAll(text []byte) []byte {
	lines := bytes.SplitAfter(text, []byte("\n"))
	for i, line := range lines {
		key, value := splitConfigLine(string(line))
		if strings.EqualFold(key, "Match") && matchesAll(value) {
			lines[i] = []byte("Match all\n")
		}
	}
	return bytes.Join(lines, nil)
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

// lookup returns every line that gives alias one of keys, in the order
// ssh reads them: the first one is the value in force.
func (c sshConfig) lookup(alias string, keys ...string) []setting {
	var out []setting
	for _, f := range c {
		out = f.lookup(alias, keys, out)
	}
	return out
}

func (f *configFile) lookup(alias string, keys []string, out []setting) []setting {
	for _, h := range f.cfg.Hosts {
		if !h.Matches(alias) {
			continue
		}
		for _, n := range h.Nodes {
			switch n := n.(type) {
			case *ssh_config.KV:
				if containsFold(keys, n.Key) {
					out = append(out, setting{key: n.Key, value: n.Value, file: f.path, line: n.Pos().Line})
				}
			case *ssh_config.Include:
				for _, sub := range f.includes[n] {
					out = sub.lookup(alias, keys, out)
				}
			}
		}
	}
	return out
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
func (c sshConfig) first(alias, key string) (setting, bool) {
	all := c.lookup(alias, key)
	if len(all) == 0 {
		return setting{}, false
	}
	return all[0], true
}

// get is the value in force for key, "" if none.
func (c sshConfig) get(alias, key string) string {
	s, _ := c.first(alias, key)
	return s.value
}

// getAll is every value given for key: IdentityFile and SendEnv add up.
func (c sshConfig) getAll(alias, key string) []string {
	var vs []string
	for _, s := range c.lookup(alias, key) {
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
	return fmt.Errorf("ssh config %s: %s %s%s: mpirun's own ssh client %s; use the system ssh: --launch-agent 'ssh %%h'",
		s.where(), s.key, s.value, forHost, why)
}
