package hostrange

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// numbered is prefix and then n numbers from first, each as %0*d of width,
// and then suffix.
func numbered(prefix string, first, n, width int, suffix string) []string {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("%s%0*d%s", prefix, width, first+i, suffix))
	}
	return names
}

// list is the parts one after the other.
func list(parts ...[]string) List { return slices.Concat(parts...) }

func TestListWire(t *testing.T) {
	tests := []struct {
		hosts List
		wire  string
	}{
		{nil, `null`},
		{List{}, `[]`},
		{List{""}, `""`},
		{List{"", ""}, `","`},
		{List{"a"}, `"a"`},
		{list([]string{"mpirunhost"}, numbered("node", 1, 512, 3, ""), []string{"other7"}, numbered("node", 600, 2, 3, "")),
			`"mpirunhost,node[001-512],other7,node[600-601]"`},
		{List{"node8", "node9", "node10"}, `"node[8-10]"`},
		{List{"node08", "node9"}, `"node08,node9"`},
		{List{"node099", "node100", "node0101"}, `"node[099-100],node0101"`},
		{List{"n1", "n1", "n2", "n1"}, `"n1,n[1-2],n1"`},
		{List{"1", "2", "3"}, `"[1-3]"`},
		{List(numbered("n", 1, 3, 2, ".lan")), `"n[01-03].lan"`},
		{List{"c1-n01", "c1-n02", "c2-n01"}, `"c1-n[01-02],c2-n01"`},
		{List{"n01.lan", "n02.lab"}, `"n01.lan,n02.lab"`},
		{List{"n999999998", "n999999999", "n1000000000"}, `"n[999999998-999999999],n1000000000"`},
		{List{"n1234567890", "n1234567891"}, `"n1234567890,n1234567891"`},
		{List{"fe80::1", "fe80::2"}, `"fe80::[1-2]"`},
		{List{"a b", "x\"y", "-"}, `"a b,x\"y,-"`},
		{List{"n1", "[fe80::1]"}, `["n1","[fe80::1]"]`},
		{List{"a,b"}, `["a,b"]`},
		{List{"a]"}, `["a]"]`},
		// A range, with room for bounds of 9 digits, is at most maxRangeLen.
		{List(numbered(strings.Repeat("x", maxRangeLen-21), 1, 2, 1, "")), `"` + strings.Repeat("x", maxRangeLen-21) + `[1-2]"`},
		{List(numbered(strings.Repeat("x", maxRangeLen-20), 1, 2, 1, "")), `"` + strings.Repeat("x", maxRangeLen-20) + `1,` + strings.Repeat("x", maxRangeLen-20) + `2"`},
	}
	for _, tt := range tests {
		w, err := json.Marshal(tt.hosts)
		if err != nil || string(w) != tt.wire {
			t.Errorf("%q is %s, %v; want %s", tt.hosts, w, err, tt.wire)
		}
		var back List
		if err := json.Unmarshal(w, &back); err != nil || !reflect.DeepEqual(back, tt.hosts) {
			t.Errorf("%s came back as %q, %v", w, back, err)
		}
	}
}

// TestListLong: a range holds what one Expand may return, and a list
// longer than the string form's bound is an array.
func TestListLong(t *testing.T) {
	h := List(numbered("n", 0, maxWireHosts, 1, ""))
	w, err := json.Marshal(h)
	if want := fmt.Sprintf(`"n[0-%d],n%d"`, MaxHosts-1, MaxHosts); err != nil || string(w) != want {
		t.Errorf("%d names are %.60s, %v; want %s", len(h), w, err, want)
	}
	w, err = json.Marshal(append(h, "m"))
	if err != nil || w[0] != '[' {
		t.Errorf("%d names are %.20s…, %v; want an array", len(h)+1, w, err)
	}
	var back List
	if err := json.Unmarshal(w, &back); err != nil || len(back) != len(h)+1 {
		t.Errorf("the array came back as %d names, %v", len(back), err)
	}
}

func TestListDecode(t *testing.T) {
	tests := []struct {
		wire string
		want List
	}{
		{`"n[1,3],m"`, List{"n1", "n3", "m"}},
		{`"r[1-2]-n[1-2]"`, List{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}},
		{`"n[0-262143],m"`, list(numbered("n", 0, MaxHosts, 1, ""), []string{"m"})},
		{`["a","b"]`, List{"a", "b"}},
		{` ["a"]`, List{"a"}},
	}
	for _, tt := range tests {
		var h List
		if err := json.Unmarshal([]byte(tt.wire), &h); err != nil || !reflect.DeepEqual(h, tt.want) {
			t.Errorf("%.40s decodes to %.60q, %v", tt.wire, h, err)
		}
	}
}

func TestListDecodeErrors(t *testing.T) {
	tests := []struct{ wire, want string }{
		{`"n[0-262143],m[0-1]"`, "more than 262145 names"},
		{`"` + strings.Repeat(",", maxWireHosts) + `"`, "more than 262145 names"},
		{`"` + strings.Repeat("x", maxRangeLen) + `[1-2]"`, "longer than 512 characters"},
		{`"n[3-1]"`, "runs backwards"},
		{`"n[0-999999]"`, "expands to more than"},
		{`"a]"`, "']' without '['"},
		{`"n[1"`, "'[' without ']'"},
		{`5`, "cannot unmarshal number"},
		{`["a",1]`, "cannot unmarshal number"},
		{`{}`, "cannot unmarshal object"},
	}
	for _, tt := range tests {
		var h List
		if err := json.Unmarshal([]byte(tt.wire), &h); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.40s: error %v, want %q", tt.wire, err, tt.want)
		}
	}
}

// TestListRoundTrip: any list, regular or not, decodes to itself.
func TestListRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		roundTrip(t, randomHosts(r))
	}
}

// roundTrip fails t unless h, sent, decodes to itself.
func roundTrip(t *testing.T, h List) {
	t.Helper()
	w, err := json.Marshal(h)
	if err != nil {
		t.Fatalf("%q: %v", h, err)
	}
	var back List
	if err := json.Unmarshal(w, &back); err != nil || !reflect.DeepEqual(back, h) {
		t.Fatalf("%q went as %s and came back as %q, %v", h, w, back, err)
	}
}

// randomHosts mixes runs that count up (at times across a change of width,
// or with a name out of step) with names of any characters, the syntax's
// own included, and empty names.
func randomHosts(r *rand.Rand) List {
	if r.IntN(20) == 0 {
		return nil
	}
	h := List{}
	for range r.IntN(8) {
		if r.IntN(2) == 0 {
			alphabet := "ab-.:@ \"\\\té0123456789"
			if r.IntN(8) == 0 {
				alphabet = "a1-[],"
			}
			h = append(h, randomName(r, alphabet))
			continue
		}
		first := []int{0, 1, 8, 98, 999, 999999998}[r.IntN(6)]
		run := numbered(randomName(r, "abc-1"), first, 1+r.IntN(5), r.IntN(4), randomName(r, ".x-"))
		if r.IntN(4) == 0 {
			run[r.IntN(len(run))] += "0"
		}
		h = append(h, run...)
	}
	return h
}

func randomName(r *rand.Rand, alphabet string) string {
	chars := []rune(alphabet)
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteRune(chars[r.IntN(len(chars))])
	}
	return b.String()
}

// FuzzListDecode: no input panics the decoder, and whatever decodes is
// sent again as something that decodes to the same list.
func FuzzListDecode(f *testing.F) {
	for _, s := range []string{`"mpirun,node[001-512],other7"`, `"n[8-10]"`, `"r[1-2]-n[01,03]x"`, `""`, `","`,
		`null`, `[]`, `["a","[b]"]`, `"n[0-262143],m"`, `"a]"`, `"n[1-2][3-4]"`, `"\u00e9[1-2]"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h List
		if json.Unmarshal(b, &h) == nil {
			roundTrip(t, h)
		}
	})
}

// FuzzListEncode: any list of names, one a line, decodes to itself. JSON
// holds no string that is not UTF-8, in either form.
func FuzzListEncode(f *testing.F) {
	for _, s := range []string{"mpirun\nnode1\nnode2", "n8\nn9\nn10", "n09\nn010", "n1\n[fe80::1]", "", "\n", "a1b9\na1b10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) {
			roundTrip(t, strings.Split(s, "\n"))
		}
	})
}

// BenchmarkHostListWire encodes and decodes n regular names, node000001…,
// as each daemon's Welcome carries them: "ranges" is the wire form,
// "array" the former one (a []string) for comparison, and "shuffled" the
// wire form of the same names in an order that makes no range.
func BenchmarkHostListWire(b *testing.B) {
	for _, n := range []int{512, 100_000} {
		names := numbered("node", 1, n, 6, "")
		shuffled := slices.Clone(names)
		rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for i, name := range shuffled {
			shuffled[i] = strings.Clone(name) // in order in memory, as names are
		}
		b.Run(fmt.Sprintf("ranges/%d", n), func(b *testing.B) { benchWire(b, List(names), new(List)) })
		b.Run(fmt.Sprintf("array/%d", n), func(b *testing.B) { benchWire(b, names, new([]string)) })
		b.Run(fmt.Sprintf("shuffled/%d", n), func(b *testing.B) { benchWire(b, List(shuffled), new(List)) })
	}
}

// benchWire encodes names and decodes them into back.
func benchWire[L List | []string](b *testing.B, names L, back *L) {
	var w []byte
	for b.Loop() {
		w, _ = json.Marshal(names)
		if err := json.Unmarshal(w, back); err != nil || len(*back) != len(names) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(w)), "wire-bytes")
}

func TestRangesRoundTrip(t *testing.T) {
	for _, names := range [][]string{{"node2", "node3", "node5", "node7"}, {"n01", "n02", "login"}, {"a"}} {
		s := Ranges(names)
		back, err := Names(s)
		if err != nil || !slices.Equal(back, names) {
			t.Errorf("Names(Ranges(%q) = %q) = %q, %v", names, s, back, err)
		}
	}
	if s := Ranges([]string{"node2", "node3", "node5"}); s != "node[2-3],node5" {
		t.Errorf("Ranges = %q, want node[2-3],node5", s)
	}
}
