package launch

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"
)

// strictMode is StrictHostKeyChecking.
type strictMode int

const (
	strictYes       strictMode = iota // refuse unknown hosts ("yes", "ask", default)
	strictAcceptNew                   // accept and remember unknown hosts
	strictNo                          // accept anything unknown ("no", "off")
)

func (m strictMode) String() string {
	return [...]string{"yes", "accept-new", "no"}[m]
}

// target is what one Launch needs to know about its host, resolved from the
// host argument, the ssh config and the options.
type target struct {
	alias          string // host as given, without user@: the config's Host
	user           string
	hostname       string
	port           string
	identityFiles  []string // configured; nil means the default keys
	identitiesOnly bool
	knownHosts     []string // UserKnownHostsFile: looked up and appended to
	globalKnown    []string // GlobalKnownHostsFile: only looked up
	strict         strictMode
	hashKnown      bool // HashKnownHosts: hash the names remember writes
	timeout        time.Duration
}

// addr is the address dialed, and the known_hosts lookup key.
func (t *target) addr() string { return net.JoinHostPort(t.hostname, t.port) }

// describe names the host for error messages: "node005 (127.1.0.5:2222)",
// or just the address when the alias is the host name.
func (t *target) describe() string {
	if t.alias == t.hostname {
		return t.addr()
	}
	return fmt.Sprintf("%s (%s)", t.alias, t.addr())
}

// loadConfig parses the OpenSSH client config once. path "" means
// ~/.ssh/config if it exists; nil config means none. It returns the path
// read, which messages about a setting name.
func loadConfig(path string) (*ssh_config.Config, string, error) {
	explicit := path != ""
	if !explicit {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, "", nil
		}
		path = filepath.Join(home, ".ssh", "config")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("ssh config: %w", err)
	}
	defer f.Close()
	cfg, err := ssh_config.Decode(f)
	if err != nil {
		return nil, "", fmt.Errorf("ssh config %s: %w", path, err)
	}
	return cfg, path, nil
}

// unsupportedKeys are settings the native client cannot honour. Ignoring
// one would connect where the user said not to (ProxyCommand false still
// connecting directly), so each is an error that points to the system ssh.
var unsupportedKeys = []string{"ProxyJump", "ProxyCommand"}

// checkSupported refuses a host whose config uses a setting the native
// client cannot honour, naming the file and line.
func (s *SSH) checkSupported(alias string) error {
	for _, key := range unsupportedKeys {
		v := configGet(s.cfg, alias, key)
		if v == "" || strings.EqualFold(v, "none") {
			continue
		}
		return fmt.Errorf("ssh config %s: %s %s for %s: mpirun's own ssh client cannot do this; use the system ssh: --launch-agent 'ssh %%h'",
			s.where(alias, key), key, v, alias)
	}
	return nil
}

// where is "FILE:LINE" of the line that gives alias its key, as ssh
// reads it: the first match wins.
func (s *SSH) where(alias, key string) string {
	for _, h := range s.cfg.Hosts {
		if !h.Matches(alias) {
			continue
		}
		for _, n := range h.Nodes {
			switch n := n.(type) {
			case *ssh_config.KV:
				if strings.EqualFold(n.Key, key) {
					return fmt.Sprintf("%s:%d", s.cfgPath, n.Pos().Line)
				}
			case *ssh_config.Include:
				if n.Get(alias, key) != "" {
					return fmt.Sprintf("%s:%d (a file it includes)", s.cfgPath, n.Pos().Line)
				}
			}
		}
	}
	return s.cfgPath
}

// CheckHosts refuses, before anything starts, hosts whose config the
// native client cannot honour.
func (s *SSH) CheckHosts(hosts []string) error {
	for _, host := range hosts {
		if err := s.checkSupported(aliasOf(host)); err != nil {
			return err
		}
	}
	return nil
}

// aliasOf is host without "user@" and IPv6 brackets: the config's Host.
func aliasOf(host string) string {
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if a, ok := strings.CutPrefix(host, "["); ok {
		host = strings.TrimSuffix(a, "]")
	}
	return host
}

// configGet is cfg.Get that tolerates a nil config.
func configGet(cfg *ssh_config.Config, alias, key string) string {
	if cfg == nil {
		return ""
	}
	v, _ := cfg.Get(alias, key)
	return v
}

func configGetAll(cfg *ssh_config.Config, alias, key string) []string {
	if cfg == nil {
		return nil
	}
	v, _ := cfg.GetAll(alias, key)
	return v
}

// resolve builds the target for host ("host" or "user@host").
func (s *SSH) resolve(host string) (*target, error) {
	t := &target{alias: aliasOf(host)}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		t.user = host[:i]
	}
	if t.alias == "" {
		return nil, fmt.Errorf("ssh: empty host name in %q", host)
	}
	if err := s.checkSupported(t.alias); err != nil {
		return nil, err
	}
	get := func(key string) string { return configGet(s.cfg, t.alias, key) }
	err := t.resolveAddr(get)
	if err == nil {
		err = t.resolveDefaults(get, s.opts)
	}
	if err == nil {
		err = t.resolveFiles(get, configGetAll(s.cfg, t.alias, "IdentityFile"))
	}
	if err == nil {
		err = t.resolvePolicy(get)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh config for %s: %w", t.alias, err)
	}
	return t, nil
}

// resolveAddr sets hostname and port.
func (t *target) resolveAddr(get func(string) string) error {
	t.hostname = t.alias
	if h := get("HostName"); h != "" {
		h, err := expandTokens(h, map[byte]string{'h': t.alias})
		if err != nil {
			return fmt.Errorf("HostName: %w", err)
		}
		t.hostname = h
	}
	t.port = "22"
	if p := get("Port"); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("bad Port %q", p)
		}
		t.port = p
	}
	return nil
}

// resolveDefaults sets user and timeout. Precedence for both: the host
// argument's user@, then the config, then the options (which have their
// defaults filled in by NewSSH).
func (t *target) resolveDefaults(get func(string) string, opts SSHOptions) error {
	if t.user == "" {
		t.user = get("User")
	}
	if t.user == "" {
		t.user = opts.User
	}
	t.timeout = opts.ConnectTimeout
	if v := get("ConnectTimeout"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("bad ConnectTimeout %q", v)
		}
		t.timeout = time.Duration(n) * time.Second
	}
	return nil
}

// resolveFiles sets the identity and known_hosts files.
func (t *target) resolveFiles(get func(string) string, identities []string) error {
	var err error
	if len(identities) > 0 {
		if t.identityFiles, err = t.expandAll(identities); err != nil {
			return fmt.Errorf("IdentityFile: %w", err)
		}
	}
	t.knownHosts, err = t.fileList(get("UserKnownHostsFile"), "~/.ssh/known_hosts")
	if err != nil {
		return fmt.Errorf("UserKnownHostsFile: %w", err)
	}
	t.globalKnown, err = t.fileList(get("GlobalKnownHostsFile"),
		"/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2")
	if err != nil {
		return fmt.Errorf("GlobalKnownHostsFile: %w", err)
	}
	return nil
}

// fileList expands a space-separated list of files; "none" means no file.
func (t *target) fileList(v, def string) ([]string, error) {
	if v == "" {
		v = def
	}
	if strings.EqualFold(v, "none") {
		return nil, nil
	}
	return t.expandAll(strings.Fields(v))
}

// resolvePolicy sets StrictHostKeyChecking, IdentitiesOnly and HashKnownHosts.
func (t *target) resolvePolicy(get func(string) string) error {
	switch v := strings.ToLower(get("StrictHostKeyChecking")); v {
	case "", "yes", "ask":
		t.strict = strictYes
	case "accept-new":
		t.strict = strictAcceptNew
	case "no", "off":
		t.strict = strictNo
	default:
		return fmt.Errorf("bad StrictHostKeyChecking %q", v)
	}
	var err error
	if t.identitiesOnly, err = yesNo(get, "IdentitiesOnly"); err != nil {
		return err
	}
	t.hashKnown, err = yesNo(get, "HashKnownHosts")
	return err
}

// yesNo reads a yes/no option; unset is no.
func yesNo(get func(string) string, key string) (bool, error) {
	switch v := strings.ToLower(get(key)); v {
	case "", "no":
		return false, nil
	case "yes":
		return true, nil
	default:
		return false, fmt.Errorf("bad %s %q", key, v)
	}
}

// expandAll expands ~ and the %-tokens of OpenSSH in file names.
func (t *target) expandAll(files []string) ([]string, error) {
	home, _ := os.UserHomeDir()
	tokens := map[byte]string{
		'd': home, 'u': localUser(), 'h': t.hostname, 'r': t.user,
		'p': t.port, 'n': t.alias,
	}
	out := make([]string, 0, len(files))
	for _, f := range files {
		f, err := expandTokens(f, tokens)
		if err != nil {
			return nil, err
		}
		out = append(out, expandTilde(f, home))
	}
	return out, nil
}

// expandTilde expands a leading "~/" (or a lone "~") to home.
func expandTilde(path, home string) string {
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}

// expandTokens replaces %x by tokens[x] and %% by %.
func expandTokens(s string, tokens map[byte]string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i == len(s) {
			return "", fmt.Errorf("%q: lone %% at the end", s)
		}
		if s[i] == '%' {
			b.WriteByte('%')
			continue
		}
		v, ok := tokens[s[i]]
		if !ok {
			return "", fmt.Errorf("%q: unsupported token %%%c", s, s[i])
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// localUser is the name of the user running this process.
func localUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// Address is the host:port that Launch dials for host, after the ssh
// config has had its say (HostName, Port). mpirun uses it to pick the
// local address its daemons can call back on.
func (s *SSH) Address(host string) (string, error) {
	t, err := s.resolve(host)
	if err != nil {
		return "", err
	}
	return t.addr(), nil
}
