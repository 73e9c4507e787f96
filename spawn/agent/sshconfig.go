package agent

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// target is what one Start needs to know about its host, resolved from the
// host argument, the ssh config and the options.
type target struct {
	alias          string // host as given, without user@: the config's Host
	asked          query  // alias and user as given, for the config's lookups
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
	network        string   // "tcp", or "tcp4"/"tcp6" for AddressFamily
	agentSocket    *string  // IdentityAgent: nil means $SSH_AUTH_SOCK, "" none
	forwardAgent   string   // ForwardAgent's socket; "" forwards none
	sendEnv        []string // SendEnv patterns; "-PATTERN" takes one back
	setEnv         []string // SetEnv "NAME=value", the first per name wins
	proxyCommand   string   // ProxyCommand, tokens expanded
	jumps          []string // ProxyJump hops, the first dialed first
	algos          algorithms
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

// CheckHosts refuses, before anything starts, hosts whose config the
// native client cannot honour, and jump hosts that do not resolve.
func (s *SSH) CheckHosts(hosts []string) error {
	for _, host := range hosts {
		t, err := s.resolve(host)
		if err == nil {
			err = s.checkJumps(t, 0)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkJumps resolves the jump hosts on the way to t, with their own
// config where it applies (the first hop's).
func (s *SSH) checkJumps(t *target, hops int) error {
	if len(t.jumps) > 0 && hops >= maxHops {
		return hopsError(t)
	}
	for i, hop := range t.jumps {
		jt, err := s.resolveJump(hop, t.jumps[:i])
		if err != nil {
			return err
		}
		if i == 0 {
			if err := s.checkJumps(jt, hops+1); err != nil {
				return err
			}
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

// resolve builds the target for host ("host" or "user@host").
func (s *SSH) resolve(host string) (*target, error) {
	t := &target{alias: aliasOf(host)}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		t.user = host[:i]
	}
	if t.alias == "" {
		return nil, fmt.Errorf("ssh: empty host name in %q", host)
	}
	t.asked = query{alias: t.alias, user: t.user}
	if err := s.checkSupported(t.asked); err != nil {
		return nil, err
	}
	get := func(key string) string { return s.cfg.get(t.asked, key) }
	err := t.resolveAddr(get)
	if err == nil {
		err = t.resolveDefaults(get, s.opts)
	}
	if err == nil {
		err = t.resolveFiles(get, s.cfg.getAll(t.asked, "IdentityFile"))
	}
	if err == nil {
		err = t.resolveSession(get, s.cfg.getAll(t.asked, "SendEnv"), s.cfg.getAll(t.asked, "SetEnv"))
	}
	if err == nil {
		err = s.resolveProxy(t)
	}

	if err == nil {
		err = t.resolvePolicy(get)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh config for %s: %w", t.alias, err)
	}
	if err := s.resolveAlgorithms(t); err != nil {
		return nil, err // names its file and line
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
	switch v := strings.ToLower(get("AddressFamily")); v {
	case "", "any":
		t.network = "tcp"
	case "inet":
		t.network = "tcp4"
	case "inet6":
		t.network = "tcp6"
	default:
		return fmt.Errorf("bad AddressFamily %q", v)
	}
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

// resolveSession sets SendEnv, SetEnv, ForwardAgent and IdentityAgent.
func (t *target) resolveSession(get func(string) string, sendEnv, setEnv []string) error {
	for _, v := range sendEnv {
		t.sendEnv = append(t.sendEnv, strings.Fields(v)...)
	}
	for _, v := range setEnv {
		words, err := splitWords(v)
		if err != nil {
			return fmt.Errorf("SetEnv: %w", err)
		}
		for _, w := range words {
			if !strings.Contains(w, "=") {
				return fmt.Errorf("SetEnv %q: not NAME=value", w)
			}
			t.setEnv = append(t.setEnv, w)
		}
	}
	if err := t.resolveForwardAgent(get("ForwardAgent")); err != nil {
		return fmt.Errorf("ForwardAgent: %w", err)
	}
	switch v := get("IdentityAgent"); v {
	case "", "SSH_AUTH_SOCK":
	case "none":
		t.agentSocket = new(string)
	default:
		if name, ok := strings.CutPrefix(v, "$"); ok {
			v = os.Getenv(name)
		} else if files, err := t.expandAll([]string{v}); err != nil {
			return fmt.Errorf("IdentityAgent: %w", err)
		} else {
			v = files[0]
		}
		t.agentSocket = &v
	}
	return nil
}

// resolveProxy sets ProxyCommand or ProxyJump: whichever the config gives
// first, as in OpenSSH; "none" is neither.
func (s *SSH) resolveProxy(t *target) error {
	sets := s.cfg.lookup(t.asked, "ProxyJump", "ProxyCommand")
	if len(sets) == 0 || strings.EqualFold(sets[0].value, "none") {
		return nil
	}
	set := sets[0]
	if strings.EqualFold(set.key, "ProxyCommand") {
		cmd, err := expandTokens(set.value, t.tokens())
		if err != nil {
			return fmt.Errorf("ProxyCommand (%s): %w", set.where(), err)
		}
		t.proxyCommand = cmd
		return nil
	}
	t.jumps = strings.Split(set.value, ",")
	for _, hop := range t.jumps {
		if _, _, _, err := parseJump(hop); err != nil {
			return fmt.Errorf("ProxyJump (%s): %w", set.where(), err)
		}
	}
	return nil
}

// parseJump splits a ProxyJump hop: [user@]host[:port], or
// ssh://[user@]host[:port].
func parseJump(hop string) (user, host, port string, err error) {
	rest := strings.TrimPrefix(hop, "ssh://")
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		user, rest = rest[:i], rest[i+1:]
	}
	host = rest
	if strings.HasPrefix(rest, "[") || strings.Count(rest, ":") == 1 {
		if h, p, err := net.SplitHostPort(rest); err == nil {
			host, port = h, p
		} else {
			host = strings.Trim(rest, "[]")
		}
	}
	if host == "" {
		return "", "", "", fmt.Errorf("%q: no host", hop)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return "", "", "", fmt.Errorf("%q: bad port", hop)
		}
	}
	return user, host, port, nil
}

// resolveJump builds the target of a jump host. Its own config applies
// (user, port, keys, known hosts, its own proxy) unless hops before it
// are given: then those are how it is reached, as ssh -J does.
func (s *SSH) resolveJump(hop string, before []string) (*target, error) {
	user, host, port, _ := parseJump(hop) // checked by resolveProxy
	if user != "" {
		host = user + "@" + host
	}
	t, err := s.resolve(host)
	if err != nil {
		return nil, fmt.Errorf("jump host %s: %w", hop, err)
	}
	if port != "" {
		t.port = port
	}
	if len(before) > 0 {
		t.jumps, t.proxyCommand = before, ""
	}
	return t, nil
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
	out := make([]string, 0, len(files))
	for _, f := range files {
		f, err := expandTokens(f, t.tokens())
		if err != nil {
			return nil, err
		}
		out = append(out, expandTilde(f, home))
	}
	return out, nil
}

// tokens are OpenSSH's %-tokens for file names and commands.
func (t *target) tokens() map[byte]string {
	home, _ := os.UserHomeDir()
	return map[byte]string{
		'd': home, 'u': localUser(), 'h': t.hostname, 'r': t.user,
		'p': t.port, 'n': t.alias,
	}
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

// Address is the host:port that Start dials for host, after the ssh
// config has had its say (HostName, Port). mpirun uses it to pick the
// local address its daemons can call back on.
func (s *SSH) Address(host string) (string, error) {
	t, err := s.resolve(host)
	if err != nil {
		return "", err
	}
	return t.addr(), nil
}
