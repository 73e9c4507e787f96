package agent

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"orted", "--hnp", "tcp://127.0.0.1:5000"}, "orted --hnp tcp://127.0.0.1:5000"},
		{[]string{"/opt/x/bin/orted", "-v", "a=b", "x@y,z", "+1%"}, "/opt/x/bin/orted -v a=b x@y,z +1%"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"echo", "a b"}, "echo 'a b'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"echo", "$HOME", "`x`", "a;b", "a|b", "a&b", "*", "?", "~", "#c", "!"},
			`echo '$HOME' '` + "`x`" + `' 'a;b' 'a|b' 'a&b' '*' '?' '~' '#c' '!'`},
		{[]string{"echo", "tab\there", "new\nline", `back\slash`, `"q"`},
			"echo 'tab\there' 'new\nline' 'back\\slash' '\"q\"'"},
		{[]string{"A=b", "A=b"}, "'A=b' A=b"}, // a first word with = is not an assignment
		{[]string{"echo", "héllo"}, "echo 'héllo'"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := Quote(tt.argv); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}

// TestQuoteRoundTrip runs the quoted words through a real shell and checks
// that they come back unchanged.
func TestQuoteRoundTrip(t *testing.T) {
	words := []string{
		"plain", "", " ", "a b", "it's", "'", "''", `"`, `\`, `\\n`, "$HOME", "${X:-y}",
		"`id`", "$(id)", "a;b", "a&&b", "a|b", "<x>", "*", "?[a]", "~", "~root", "#x", "!x",
		"tab\tx", "new\nline", "héllo", "{a,b}", "a=b", "--opt=a b", "%s", "-n", "-e",
	}
	script := `printf '%s\n' ` + Quote(words)
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", script, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var want []string
	for _, w := range words {
		want = append(want, strings.Split(w, "\n")...)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip through sh:\n got %q\nwant %q", got, want)
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"ssh -F cfg %h", []string{"ssh", "-F", "cfg", "%h"}},
		{"  srun\t-N1 -n1  -w %h \n", []string{"srun", "-N1", "-n1", "-w", "%h"}},
		{`ssh -o 'ProxyCommand ssh -W %%h:%%p gw' %h`, []string{"ssh", "-o", "ProxyCommand ssh -W %%h:%%p gw", "%h"}},
		{`a "b c" 'd "e"' "f 'g'"`, []string{"a", "b c", `d "e"`, "f 'g'"}},
		{`x"y z"'w'`, []string{"xy zw"}},
		{`"" ''`, []string{"", ""}},
		{`a\ b c\'d`, []string{"a b", "c'd"}},
		{`"a\"b\\c\$d\e"`, []string{`a"b\c$d\e`}},
		{`'a\b'`, []string{`a\b`}},
		{"", nil},
		{"   ", nil},
	}
	for _, tt := range tests {
		got, err := splitWords(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `"a\"`, `a\`} {
		if got, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q) = %q, want an error", bad, got)
		}
	}
}

func TestExpandHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"%h", "node1"},
		{"user@%h.ib", "user@node1.ib"},
		{"100%%", "100%"},
		{"%%h", "%h"},
		{"%h%h", "node1node1"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		got, err := expandHost(tt.in, "node1")
		if err != nil || got != tt.want {
			t.Errorf("expandHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"%", "a%", "%p", "%H"} {
		if got, err := expandHost(bad, "node1"); err == nil {
			t.Errorf("expandHost(%q) = %q, want an error", bad, got)
		}
	}
}
