package job

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseHostList checks that no -H value panics the parser and that
// whatever parses is usable by Build.
func FuzzParseHostList(f *testing.F) {
	for _, s := range []string{"a", "a:4,b", "a,a,b", " a , b:2 ", "u@h:2", "a,,b", "a:0", "a:-1", "-x", "a b", "a:1048576,a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ParseHostList(s)
		if err != nil {
			if hosts != nil || err.Error() == "" {
				t.Fatalf("ParseHostList(%q) = %v, %q", s, hosts, err)
			}
			return
		}
		checkParsed(t, hosts)
	})
}

// FuzzParseHostfile checks that no hostfile panics the parser, that
// errors carry the file name, and that whatever parses is usable by Build.
func FuzzParseHostfile(f *testing.F) {
	for _, s := range []string{"a\nb slots=2\n", "a slots=4 max_slots=8 # c\n", "a:4\n", "# x\n\n", "a slot=2", "a slots=3 max_slots=2", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ParseHostfile(strings.NewReader(s), "hf")
		if err != nil {
			if hosts != nil || !strings.HasPrefix(err.Error(), "hf:") {
				t.Fatalf("ParseHostfile(%q) = %v, %q", s, hosts, err)
			}
			return
		}
		checkParsed(t, hosts)
	})
}

// checkParsed asserts the guarantees the parsers give their callers.
func checkParsed(t *testing.T, hosts []Host) {
	t.Helper()
	if len(hosts) == 0 {
		t.Fatal("parse succeeded with no hosts")
	}
	seen := make(map[string]bool)
	for _, h := range hosts {
		if h.Name == "" || h.Slots <= 0 || h.MaxSlots < 0 || h.MaxSlots > 0 && h.Slots > h.MaxSlots {
			t.Fatalf("bad host %+v", h)
		}
		if seen[h.Name] {
			t.Fatalf("host %q not merged", h.Name)
		}
		seen[h.Name] = true
	}
	if _, err := Build(hosts, Options{NP: 1}); err != nil {
		t.Fatalf("Build rejects parsed hosts %v: %v", hosts, err)
	}
}

// FuzzSlurmHosts checks that no Slurm allocation panics the parser and
// that whatever parses is usable by Build.
func FuzzSlurmHosts(f *testing.F) {
	f.Add("n[1-3],login", "2(x3),1")
	f.Add("n[01-02]", "")
	f.Add("n[1-2]", "2(x")
	f.Fuzz(func(t *testing.T, list, tasks string) {
		hosts, err := SlurmHosts(list, tasks)
		if err != nil {
			if hosts != nil {
				t.Fatalf("SlurmHosts(%q, %q) = %v with error %v", list, tasks, hosts, err)
			}
			return
		}
		checkParsed(t, hosts)
	})
}

// FuzzLSFHosts checks that no LSB_MCPU_HOSTS panics the parser, that its
// errors name the variable, and that whatever parses keeps every slot the
// variable gave and is usable by Build.
func FuzzLSFHosts(f *testing.F) {
	for _, s := range []string{"a 4 b 2", "a 1 a 1", " a\t2\n", "a", "a 0", "a -1", "-a 1", "a 1048577", "a 1048576 a 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := LSFHosts(s)
		if err != nil {
			if hosts != nil || !strings.HasPrefix(err.Error(), "LSB_MCPU_HOSTS") {
				t.Fatalf("LSFHosts(%q) = %v, %q", s, hosts, err)
			}
			return
		}
		checkParsed(t, hosts)
		if got, want := sumSlots(hosts), lsfSlots(s); got != want {
			t.Fatalf("LSFHosts(%q) has %d slots, the variable gives %d", s, got, want)
		}
	})
}

// sumSlots adds up slots without totalSlots' saturation.
func sumSlots(hosts []Host) int {
	n := 0
	for _, h := range hosts {
		n += h.Slots
	}
	return n
}

// lsfSlots adds up the counts of a variable that parsed, so each is a
// plain decimal number.
func lsfSlots(s string) int {
	fields := strings.Fields(s)
	n := 0
	for i := 1; i < len(fields); i += 2 {
		count, _ := strconv.Atoi(fields[i])
		n += count
	}
	return n
}
