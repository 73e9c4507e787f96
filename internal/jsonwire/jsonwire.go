// Package jsonwire holds what the compact wire forms of the daemons' long
// lists (the host list, the rank map) share.
package jsonwire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// String reads a JSON string that encoding/json has checked already, as
// an UnmarshalJSON method receives it: one without escapes, all UTF-8, is
// its bytes between the quotes, which saves a second pass over a long
// list.
func String(b []byte) (string, error) {
	if len(b) >= 2 && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		return string(b[1 : len(b)-1]), nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}
