package agent

import (
	"fmt"
	"slices"
	"strings"
)

// unsupportedSettings are the ssh_config(5) keywords that change how a
// connection is made, or what runs at the other end, and that the native
// client does not do. Each names the values that are harmless (the
// default, or what the client does anyway); any other value stops mpirun
// with the file and line, never ignored.
//
// Left out on purpose, as they change neither: ControlMaster, ControlPath
// and ControlPersist (connection sharing), Compression, ServerAlive* and
// TCPKeepAlive (the daemons watch their links themselves), BatchMode (the
// client never prompts), UpdateHostKeys, LogLevel and the like. Other
// authentication methods (GSSAPIAuthentication, HostbasedAuthentication,
// passwords) only add ways in beside public keys: they are named when
// authentication fails (see authNotTried).
var unsupportedSettings = []struct {
	key      string
	harmless []string // lower case; nil: every value is unsupported
}{
	{"BindAddress", nil},
	{"BindInterface", nil},
	{"CanonicalizeHostname", []string{"no"}},
	{"CertificateFile", nil},
	{"CheckHostIP", []string{"no"}},
	{"ConnectionAttempts", []string{"1"}},
	{"DynamicForward", nil},
	{"ForkAfterAuthentication", []string{"no"}},
	{"ForwardX11", []string{"no"}},
	{"HostKeyAlias", nil},
	{"KnownHostsCommand", []string{"none"}},
	{"LocalForward", nil},
	{"PermitLocalCommand", []string{"no"}},
	{"PKCS11Provider", []string{"none"}},
	{"ProxyUseFdpass", []string{"no"}},
	{"PubkeyAuthentication", []string{"yes", "unbound", "host-bound"}},
	{"RemoteCommand", []string{"none"}},
	{"RemoteForward", nil},
	{"RequestTTY", []string{"no", "auto", "yes"}}, // "yes" asks only when stdin is a terminal: never here
	{"RevokedHostKeys", []string{"none"}},
	{"SessionType", []string{"default"}},
	{"StdinNull", []string{"no"}},
	{"Tunnel", []string{"no"}},
	{"VerifyHostKeyDNS", []string{"no"}},
}

// checkSupported refuses a host whose config uses a setting the native
// client cannot honour, naming the file and line.
func (s *SSH) checkSupported(q query) error {
	for _, u := range unsupportedSettings {
		set, ok := s.cfg.first(q, u.key)
		if !ok || (u.harmless != nil && slices.Contains(u.harmless, strings.ToLower(set.value))) {
			continue
		}
		return unsupportedError(set, q.alias, "cannot do this")
	}
	if set, ok := s.cfg.first(q, "PreferredAuthentications"); ok &&
		!slices.Contains(strings.Split(strings.ToLower(set.value), ","), "publickey") {
		return unsupportedError(set, q.alias, "authenticates by public key only")
	}
	return nil
}

// authNotTried names the authentication methods the config enables and
// the native client does not try, for the message when authentication
// fails: "; not tried: GSSAPIAuthentication yes (FILE:LINE)…".
func (s *SSH) authNotTried(q query) string {
	var named []string
	for _, key := range []string{"GSSAPIAuthentication", "HostbasedAuthentication"} {
		if set, ok := s.cfg.first(q, key); ok && strings.EqualFold(set.value, "yes") {
			named = append(named, fmt.Sprintf("%s yes (%s)", set.key, set.where()))
		}
	}
	if len(named) == 0 {
		return ""
	}
	return fmt.Sprintf("; not tried: %s, which mpirun's own ssh client does not do; use the system ssh: --launch-agent 'ssh %%h'",
		strings.Join(named, ", "))
}
