package job

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseHostList(t *testing.T) {
	tests := []struct {
		in   string
		want []Host
	}{
		{"a", []Host{{"a", 1, 0}}},
		{"a,b,c", []Host{{"a", 1, 0}, {"b", 1, 0}, {"c", 1, 0}}},
		{"a:4,b", []Host{{"a", 4, 0}, {"b", 1, 0}}},
		{"a,a,b", []Host{{"a", 2, 0}, {"b", 1, 0}}},
		{"b,a,b:3", []Host{{"b", 4, 0}, {"a", 1, 0}}},
		{" a , b:2 ", []Host{{"a", 1, 0}, {"b", 2, 0}}},
		{"a : 2", []Host{{"a", 2, 0}}},
		{"a:007", []Host{{"a", 7, 0}}},
		{"user@node-1.example.org:2,node_2", []Host{{"user@node-1.example.org", 2, 0}, {"node_2", 1, 0}}},
		{"10.0.0.1:2", []Host{{"10.0.0.1", 2, 0}}},
		{"a:1048576", []Host{{"a", MaxHostSlots, 0}}},
	}
	for _, tt := range tests {
		got, err := ParseHostList(tt.in)
		if err != nil {
			t.Errorf("ParseHostList(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseHostList(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseHostListErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `empty host list`},
		{"  ", `empty host list`},
		{"a,,b", `host list "a,,b" has an empty entry`},
		{"a,", `has an empty entry`},
		{",a", `has an empty entry`},
		{"a, ,b", `has an empty entry`},
		{"a:0", `host list entry "a:0": slot count must be at least 1`},
		{"a:-1", `host list entry "a:-1": slot count "-1" is not a positive whole number`},
		{"a:x", `host list entry "a:x": slot count "x" is not a positive whole number`},
		{"a:", `host list entry "a:": slot count "" is not a positive whole number`},
		{"a:+4", `slot count "+4" is not`},
		{"a:4:5", `slot count "4:5" is not`},
		{"a:99999999", `host list entry "a:99999999": slot count 99999999 is more than the limit of 1048576`},
		{"a:1048577", `slot count 1048577 is more than the limit of 1048576`},
		{"a:1048576,a", `host a: slots add up to 1048577, more than the limit`},
		{":4", `host list entry ":4": empty host name`},
		{"a b", `host list entry "a b": host name "a b" contains ' '`},
		{"-oProxyCommand=x", `host name "-oProxyCommand=x" must not start with '-'`},
		{"a;rm", `contains ';'`},
		{"@a", `has no user before '@'`},
		{"u@", `has no host after '@'`},
		{"u@a@b", `has more than one '@'`},
		{"u@-a", `host after '@' must not start with '-'`},
		{strings.Repeat("x", 513), `is longer than 512 characters`},
		{"a[1-200000],b[1-200000]", `host list entry "b[1-200000]": more than 262144 hosts in all`},
	}
	for _, tt := range tests {
		_, err := ParseHostList(tt.in)
		if err == nil {
			t.Errorf("ParseHostList(%q) succeeded, want error %q", tt.in, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseHostList(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}
