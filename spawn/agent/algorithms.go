package agent

import (
	"crypto/rsa"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// algorithms is what the config's algorithm lists allow (Ciphers, MACs,
// KexAlgorithms, HostKeyAlgorithms, PubkeyAcceptedAlgorithms) and the
// smallest RSA key it accepts (RequiredRSASize). A nil list leaves the
// client's defaults. Site policies set these (RHEL's crypto-policies do in
// the system file), so the client honours them rather than refuse them.
type algorithms struct {
	ciphers, macs, kex, hostKeys, pubkeys []string
	caSigs                                []string // CASignatureAlgorithms
	minRSABits                            int
}

// algorithmLists pairs each keyword with its kind of algorithm.
var algorithmLists = []struct {
	key  string
	kind func(ssh.Algorithms) []string
	dst  func(*algorithms) *[]string
}{
	{"Ciphers", func(a ssh.Algorithms) []string { return a.Ciphers }, func(a *algorithms) *[]string { return &a.ciphers }},
	{"MACs", func(a ssh.Algorithms) []string { return a.MACs }, func(a *algorithms) *[]string { return &a.macs }},
	{"KexAlgorithms", func(a ssh.Algorithms) []string { return a.KeyExchanges }, func(a *algorithms) *[]string { return &a.kex }},
	{"HostKeyAlgorithms", func(a ssh.Algorithms) []string { return a.HostKeys }, func(a *algorithms) *[]string { return &a.hostKeys }},
	{"PubkeyAcceptedAlgorithms", func(a ssh.Algorithms) []string { return a.PublicKeyAuths }, func(a *algorithms) *[]string { return &a.pubkeys }},
	{"CASignatureAlgorithms", func(a ssh.Algorithms) []string { return a.PublicKeyAuths }, func(a *algorithms) *[]string { return &a.caSigs }},
}

// resolveAlgorithms reads the algorithm settings in force for t.
func (s *SSH) resolveAlgorithms(t *target) error {
	supported, insecure := ssh.SupportedAlgorithms(), ssh.InsecureAlgorithms()
	for _, l := range algorithmLists {
		set, ok := s.cfg.first(t.asked, l.key)
		if !ok && l.key == "PubkeyAcceptedAlgorithms" {
			set, ok = s.cfg.first(t.asked, "PubkeyAcceptedKeyTypes") // its old name
		}
		if !ok {
			continue
		}
		known := append(slices.Clone(l.kind(supported)), l.kind(insecure)...)
		names := applyAlgorithmList(set.value, l.kind(supported), known)
		if len(names) == 0 {
			return unsupportedError(set, t.alias, "knows none of these algorithms")
		}
		*l.dst(&t.algos) = names
	}
	if set, ok := s.cfg.first(t.asked, "RequiredRSASize"); ok {
		n, err := strconv.Atoi(set.value)
		if err != nil || n < 1024 {
			return fmt.Errorf("ssh config %s: bad RequiredRSASize %q: want a number of bits of at least 1024", set.where(), set.value)
		}
		t.algos.minRSABits = n
	}
	return nil
}

// applyAlgorithmList applies one of OpenSSH's list forms to def: "a,b"
// replaces it, "+a,b" appends to it, "-a,b" removes from it, "^a,b" puts
// first. Entries may be patterns (* and ?). Names this client does not
// know are left out: the list only narrows what is offered, so leaving
// out a name never offers what the site did not allow.
func applyAlgorithmList(value string, def, known []string) []string {
	op, list := byte('='), value
	if value != "" && strings.ContainsRune("+-^", rune(value[0])) {
		op, list = value[0], value[1:]
	}
	patterns := strings.Split(list, ",")
	switch op {
	case '+':
		return appendNew(slices.Clone(def), matching(patterns, known))
	case '-':
		return slices.DeleteFunc(slices.Clone(def), func(a string) bool { return matchesAny(patterns, a) })
	case '^':
		return appendNew(matching(patterns, known), def)
	default:
		return matching(patterns, known)
	}
}

// matching lists the known names each pattern matches, in the patterns'
// order.
func matching(patterns, known []string) []string {
	var out []string
	for _, p := range patterns {
		for _, k := range known {
			if ok, _ := path.Match(strings.TrimSpace(p), k); ok {
				out = appendNew(out, []string{k})
			}
		}
	}
	return out
}

func matchesAny(patterns []string, name string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		ok, _ := path.Match(strings.TrimSpace(p), name)
		return ok
	})
}

// appendNew appends the names of add that list lacks.
func appendNew(list, add []string) []string {
	for _, a := range add {
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list
}

// apply narrows the handshake's configuration to what the config allows.
// preferred is the host key order known_hosts suggests (nil: none).
func (a algorithms) apply(cfg *ssh.ClientConfig, preferred []string) {
	cfg.Ciphers, cfg.MACs, cfg.KeyExchanges = a.ciphers, a.macs, a.kex
	cfg.HostKeyAlgorithms = preferred
	if a.hostKeys != nil {
		cfg.HostKeyAlgorithms = appendNew(slices.DeleteFunc(slices.Clone(preferred),
			func(k string) bool { return !slices.Contains(a.hostKeys, k) }), a.hostKeys)
	}
	check := cfg.HostKeyCallback
	cfg.HostKeyCallback = func(host string, remote net.Addr, key ssh.PublicKey) error {
		if err := a.checkHostKey(key); err != nil {
			return hostKeyError{err}
		}
		return check(host, remote, key)
	}
}

// checkHostKey refuses a host key the config does not accept: an RSA key
// under RequiredRSASize, a certificate signed with an algorithm not in
// CASignatureAlgorithms.
func (a algorithms) checkHostKey(key ssh.PublicKey) error {
	if bits := rsaBits(key); bits > 0 && bits < a.minRSABits {
		return fmt.Errorf("ssh: the host's RSA key has %d bits, under RequiredRSASize %d", bits, a.minRSABits)
	}
	if cert, ok := key.(*ssh.Certificate); ok && a.caSigs != nil && cert.Signature != nil &&
		!slices.Contains(a.caSigs, cert.Signature.Format) {
		return fmt.Errorf("ssh: the host's certificate is signed with %s, which CASignatureAlgorithms leaves out", cert.Signature.Format)
	}
	return nil
}

// signers keeps the keys the config lets us offer, each limited to the
// signature algorithms it allows.
func (a algorithms) signers(all []ssh.Signer) []ssh.Signer {
	var out []ssh.Signer
	for _, sg := range all {
		if bits := rsaBits(sg.PublicKey()); bits > 0 && bits < a.minRSABits {
			continue
		}
		if sg = a.limitSigner(sg); sg != nil {
			out = append(out, sg)
		}
	}
	return out
}

// limitSigner is sg limited to the allowed signature algorithms, nil if
// it has none of them.
func (a algorithms) limitSigner(sg ssh.Signer) ssh.Signer {
	if a.pubkeys == nil {
		return sg
	}
	keyType := sg.PublicKey().Type()
	var allowed []string
	for _, alg := range signatureAlgorithms(keyType) {
		if slices.Contains(a.pubkeys, alg) {
			allowed = append(allowed, alg)
		}
	}
	if len(allowed) == 0 {
		return nil
	}
	if as, ok := sg.(ssh.AlgorithmSigner); ok && keyType == ssh.KeyAlgoRSA {
		if limited, err := ssh.NewSignerWithAlgorithms(as, allowed); err == nil {
			return limited
		}
	}
	return sg
}

// signatureAlgorithms maps a key (or certificate) type to the signature
// algorithms it can sign with.
func signatureAlgorithms(keyType string) []string {
	switch keyType {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	case ssh.CertAlgoRSAv01:
		return []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01}
	}
	return []string{keyType}
}

// rsaBits is the size of an RSA key (or a certificate's), 0 for others.
func rsaBits(key ssh.PublicKey) int {
	if cert, ok := key.(*ssh.Certificate); ok {
		key = cert.Key
	}
	ck, ok := key.(ssh.CryptoPublicKey)
	if !ok {
		return 0
	}
	if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok {
		return rk.N.BitLen()
	}
	return 0
}
