package jsonwire

import (
	"encoding/json"
	"testing"
)

// TestString: what String reads of a JSON string (as encoding/json hands
// one to UnmarshalJSON: already checked) is what encoding/json reads, with
// the fast path or without it.
func TestString(t *testing.T) {
	for _, in := range []string{`""`, `"node[001-512]"`, `"a\"b"`, `"tab\there"`, `"\u00e9t\u00e9"`, `"été"`, "\"\xff\""} {
		got, err := String([]byte(in))
		var want string
		wantErr := json.Unmarshal([]byte(in), &want)
		if (err != nil) != (wantErr != nil) || got != want {
			t.Errorf("String(%q) = %q, %v; encoding/json: %q, %v", in, got, err, want, wantErr)
		}
	}
}
