package modex

import (
	"strings"
	"testing"

	"prsh/internal/purity"
)

func TestPure(t *testing.T) { purity.Check(t, "prsh/modex") }

// bySlot returns the daemon ids of n ranks placed by slot on hosts with the
// given slot counts (daemon i+1 for host i), wrapping round like Hydra and
// Open MPI do when n exceeds the slots.
func bySlot(n int, slots ...int) []int {
	var ids []int
	for len(ids) < n {
		for h, s := range slots {
			for k := 0; k < s && len(ids) < n; k++ {
				ids = append(ids, h+1)
			}
		}
	}
	return ids
}

// byNode returns the daemon ids of n ranks dealt round-robin over hosts.
func byNode(n, hosts int) []int {
	ids := make([]int, n)
	for r := range ids {
		ids[r] = r%hosts + 1
	}
	return ids
}

// TestProcessMapping: the cases marked "traces.txt §N" are what Hydra
// sent in the captures of pmi/testdata/traces.txt.
func TestProcessMapping(t *testing.T) {
	tests := []struct {
		name     string
		rankNode []int
		want     string
	}{
		{"no ranks", nil, ""},
		{"one rank", []int{1}, "(vector,(0,1,1))"},
		{"one host, 4 ranks", bySlot(4, 4), "(vector,(0,1,4))"},
		{"ranks on mpirun's own node", []int{0, 0}, "(vector,(0,1,2))"},
		{"by slot 2+2, n=4 (traces.txt §3)", bySlot(4, 2, 2), "(vector,(0,2,2))"},
		{"by slot 1+1, n=2 (traces.txt §2)", bySlot(2, 1, 1), "(vector,(0,2,1))"},
		{"by slot 2+2, n=8 wraps", bySlot(8, 2, 2), "(vector,(0,2,2))"},
		{"by slot 2+2, n=5 ends inside a block", bySlot(5, 2, 2), "(vector,(0,2,2))"},
		{"by slot 3+1", bySlot(4, 3, 1), "(vector,(0,1,3),(1,1,1))"},
		{"by slot 2+2+1", bySlot(5, 2, 2, 1), "(vector,(0,2,2),(2,1,1))"},
		{"by slot 1+2+2", bySlot(5, 1, 2, 2), "(vector,(0,1,1),(1,2,2))"},
		{"by node, 2 hosts n=4", byNode(4, 2), "(vector,(0,2,1))"},
		{"by node, 3 hosts n=7", byNode(7, 3), "(vector,(0,3,1))"},
		{"by node, 4 hosts n=2", byNode(2, 4), "(vector,(0,2,1))"},
		{"daemon ids renumbered by first appearance", []int{7, 7, 3, 3}, "(vector,(0,2,2))"},
		{"a node named again later", []int{2, 1, 2}, "(vector,(0,2,1))"},
		{"wrap ends inside the second triple", []int{1, 2, 2, 1}, "(vector,(0,1,1),(1,1,2))"},
		{"no period", []int{1, 2, 2, 1, 1}, "(vector,(0,1,1),(1,1,2),(0,1,2))"},
		{"period of two triples", []int{1, 2, 2, 1, 2, 2}, "(vector,(0,1,1),(1,1,2))"},
		{"1000 hosts by slot", bySlot(4000, repeat(4, 1000)...), "(vector,(0,1000,4))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ProcessMapping(tt.rankNode)
			if got != tt.want {
				t.Fatalf("ProcessMapping(%v) = %q, want %q", short(tt.rankNode), got, tt.want)
			}
		})
	}
}

// TestProcessMappingTooLong: a placement with no short description gives
// "" rather than a value that would crash a PMI-1 client.
func TestProcessMappingTooLong(t *testing.T) {
	// Every host has a different slot count: one triple per host.
	var slots []int
	for h := 1; len(format(toBlocks(slots))) <= MaxMappingLen; h++ {
		slots = append(slots, h)
	}
	n := 0
	for _, s := range slots {
		n += s
	}
	if got := ProcessMapping(bySlot(n, slots...)); got != "" {
		t.Fatalf("%d distinct hosts gave %d chars: %q", len(slots), len(got), got)
	}
	fits := slots[:len(slots)-1]
	n -= slots[len(slots)-1]
	got := ProcessMapping(bySlot(n, fits...))
	if got == "" || len(got) > MaxMappingLen {
		t.Fatalf("%d hosts: got %d chars, want a mapping of at most %d", len(fits), len(got), MaxMappingLen)
	}
}

// TestProcessMappingRoundTrip: whatever the placement, the string, read
// the way MPICH reads it, gives back every rank's node.
func TestProcessMappingRoundTrip(t *testing.T) {
	seed := uint32(1)
	next := func(n int) int { // a small deterministic generator
		seed = seed*1664525 + 1013904223
		return int(seed>>8) % n
	}
	for trial := 0; trial < 2000; trial++ {
		ids := make([]int, 1+next(40))
		for r := range ids {
			ids[r] = next(1 + next(6))
		}
		m := ProcessMapping(ids)
		if m == "" {
			continue
		}
		blocks, ok := parse(m)
		if !ok || !expandsTo(blocks, renumber(ids)) {
			t.Fatalf("%v: %q does not read back", ids, m)
		}
	}
}

func repeat(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func toBlocks(slots []int) []block {
	var b []block
	for h, s := range slots {
		b = append(b, block{h, 1, s})
	}
	return b
}

// parse reads a mapping back into triples, as a check independent of format.
func parse(m string) ([]block, bool) {
	body, ok := strings.CutPrefix(m, "(vector,")
	if !ok || !strings.HasSuffix(body, ")") {
		return nil, false
	}
	var blocks []block
	for _, t := range strings.Split(strings.TrimSuffix(body, ")"), "),(") {
		t = strings.Trim(t, "()")
		var b block
		parts := strings.Split(t, ",")
		if len(parts) != 3 {
			return nil, false
		}
		for i, p := range []*int{&b.start, &b.count, &b.ppn} {
			v := 0
			for _, c := range parts[i] {
				v = v*10 + int(c-'0')
			}
			*p = v
		}
		blocks = append(blocks, b)
	}
	return blocks, true
}

func short(ids []int) []int {
	if len(ids) > 12 {
		return ids[:12]
	}
	return ids
}
