package binding

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"prsh/internal/purity"
)

func TestPure(t *testing.T) { purity.Check(t, "prsh/job/binding") }

// machine makes sockets × cores × threads CPUs numbered as Linux numbers
// them on most x86 machines: the first thread of every core first, then
// the second (cpu 0 and cpu 8 share core 0 of socket 0 on 2×4×2). Each
// socket is a NUMA node whose cores are split between two L3 caches.
func machine(sockets, cores, threads int) []CPU {
	var cpus []CPU
	for th := range threads {
		for s := range sockets {
			for c := range cores {
				cpus = append(cpus, CPU{ID: th*sockets*cores + s*cores + c, Core: c, Socket: s, NUMA: s, L3: s*2 + 2*c/cores})
			}
		}
	}
	return cpus
}

// show is each rank's binding, one per line.
func show(bs []Binding) string {
	var lines []string
	for r, b := range bs {
		lines = append(lines, fmt.Sprintf("%d: %s", r, b))
	}
	return strings.Join(lines, "\n")
}

func TestBind(t *testing.T) {
	cases := []struct {
		name  string
		cpus  []CPU
		ranks int
		p     Policy
		want  string
	}{
		{"none", machine(2, 4, 2), 2, Policy{}, "0: nothing (unbound)\n1: nothing (unbound)"},
		{"core, 2×4×2, 3 ranks", machine(2, 4, 2), 3, Policy{Unit: Core},
			"0: core 0 of socket 0 (cpus 0,8)\n1: core 1 of socket 0 (cpus 1,9)\n2: core 2 of socket 0 (cpus 2,10)"},
		{"core by socket, 2×4×2, 5 ranks", machine(2, 4, 2), 5, Policy{Unit: Core, Spread: Socket},
			"0: core 0 of socket 0 (cpus 0,8)\n1: core 4 of socket 1 (cpus 4,12)\n2: core 1 of socket 0 (cpus 1,9)\n3: core 5 of socket 1 (cpus 5,13)\n4: core 2 of socket 0 (cpus 2,10)"},
		{"socket, 2×4×2, 5 ranks by core", machine(2, 4, 2), 5, Policy{Unit: Socket},
			"0: socket 0 (cpus 0-3,8-11)\n1: socket 0 (cpus 0-3,8-11)\n2: socket 0 (cpus 0-3,8-11)\n3: socket 0 (cpus 0-3,8-11)\n4: socket 1 (cpus 4-7,12-15)"},
		{"socket by socket, 2×4×2, 3 ranks", machine(2, 4, 2), 3, Policy{Unit: Socket, Spread: Socket},
			"0: socket 0 (cpus 0-3,8-11)\n1: socket 1 (cpus 4-7,12-15)\n2: socket 0 (cpus 0-3,8-11)"},
		{"core, 1×2×1 (this testbed)", machine(1, 2, 1), 2, Policy{Unit: Core},
			"0: core 0 of socket 0 (cpus 0)\n1: core 1 of socket 0 (cpus 1)"},
		{"overload allowed wraps", machine(1, 2, 2), 3, Policy{Unit: Core, Overload: true},
			"0: core 0 of socket 0 (cpus 0,2)\n1: core 1 of socket 0 (cpus 1,3)\n2: core 0 of socket 0 (cpus 0,2)"},
		// A cpuset that left the job 3 CPUs of 2 sockets: socket 1 has
		// one core, so by socket its turn is skipped once it is full.
		{"unequal sockets by socket", []CPU{{0, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {5, 3, 1, 1, 1}}, 3, Policy{Unit: Core, Spread: Socket},
			"0: core 0 of socket 0 (cpus 0)\n1: core 2 of socket 1 (cpus 5)\n2: core 1 of socket 0 (cpus 1)"},
		// Sockets and cores are ordered by id, whatever order the CPUs come in.
		{"ids out of order", []CPU{{7, 3, 1, 1, 1}, {2, 1, 0, 0, 0}, {6, 3, 1, 1, 1}, {3, 1, 0, 0, 0}}, 2, Policy{Unit: Core},
			"0: core 0 of socket 0 (cpus 2-3)\n1: core 1 of socket 1 (cpus 6-7)"},
		{"hwthread, 1×2×2, 4 ranks: every core before a second thread", machine(1, 2, 2), 4, Policy{Unit: HWThread},
			"0: a hardware thread of core 0 of socket 0 (cpu 0)\n1: a hardware thread of core 1 of socket 0 (cpu 1)\n2: a hardware thread of core 0 of socket 0 (cpu 2)\n3: a hardware thread of core 1 of socket 0 (cpu 3)"},
		{"hwthread by socket, 2×2×1", machine(2, 2, 1), 2, Policy{Unit: HWThread, Spread: Socket},
			"0: a hardware thread of core 0 of socket 0 (cpu 0)\n1: a hardware thread of core 2 of socket 1 (cpu 2)"},
		{"l3cache, 1×4×1, 3 ranks", machine(1, 4, 1), 3, Policy{Unit: L3},
			"0: L3 cache 0 (cpus 0-1)\n1: L3 cache 0 (cpus 0-1)\n2: L3 cache 1 (cpus 2-3)"},
		{"numa by socket, 2×2×2", machine(2, 2, 2), 3, Policy{Unit: NUMA, Spread: Socket},
			"0: NUMA node 0 (cpus 0-1,4-5)\n1: NUMA node 1 (cpus 2-3,6-7)\n2: NUMA node 0 (cpus 0-1,4-5)"},
		{"core spread over L3 caches, 1×4×1", machine(1, 4, 1), 3, Policy{Unit: Core, Spread: L3},
			"0: core 0 of socket 0 (cpus 0)\n1: core 2 of socket 0 (cpus 2)\n2: core 1 of socket 0 (cpus 1)"},
		{"core spread over NUMA nodes, 2×2×1", machine(2, 2, 1), 3, Policy{Unit: Core, Spread: NUMA},
			"0: core 0 of socket 0 (cpus 0)\n1: core 2 of socket 1 (cpus 2)\n2: core 1 of socket 0 (cpus 1)"},
		{"board, 2×2×1", machine(2, 2, 1), 2, Policy{Unit: Board},
			"0: the board (cpus 0-3)\n1: the board (cpus 0-3)"},
		{"PE=2, 2×4×1, 3 ranks", machine(2, 4, 1), 3, Policy{Unit: Core, PE: 2},
			"0: cores 0-1 of socket 0 (cpus 0-1)\n1: cores 2-3 of socket 0 (cpus 2-3)\n2: cores 4-5 of socket 1 (cpus 4-5)"},
		{"PE=2 by socket, 2×4×1, 3 ranks", machine(2, 4, 1), 3, Policy{Unit: Core, PE: 2, Spread: Socket},
			"0: cores 0-1 of socket 0 (cpus 0-1)\n1: cores 4-5 of socket 1 (cpus 4-5)\n2: cores 2-3 of socket 0 (cpus 2-3)"},
		{"PE=2 with threads, 1×2×2", machine(1, 2, 2), 1, Policy{Unit: Core, PE: 2},
			"0: cores 0-1 of socket 0 (cpus 0-3)"},
		// 3 cores a socket hold one block of 2: a rank's cores stay on one socket.
		{"PE=2, 2×3×1", machine(2, 3, 1), 2, Policy{Unit: Core, PE: 2},
			"0: cores 0-1 of socket 0 (cpus 0-1)\n1: cores 3-4 of socket 1 (cpus 3-4)"},
		{"PE=2 overload allowed wraps", machine(1, 2, 1), 2, Policy{Unit: Core, PE: 2, Overload: true},
			"0: cores 0-1 of socket 0 (cpus 0-1)\n1: cores 0-1 of socket 0 (cpus 0-1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Bind(tc.cpus, tc.ranks, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if show(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", show(got), tc.want)
			}
		})
	}
}

// TestBindEveryCoreOnce: bound to cores without overload, the ranks of a
// node never share a core, for every count up to the cores, on several
// machines and both orders.
func TestBindEveryCoreOnce(t *testing.T) {
	for _, m := range [][3]int{{1, 1, 1}, {1, 2, 1}, {2, 4, 2}, {4, 6, 1}, {2, 3, 4}} {
		cpus := machine(m[0], m[1], m[2])
		for _, spread := range []Unit{"", Socket, NUMA, L3} {
			for ranks := 1; ranks <= m[0]*m[1]; ranks++ {
				bs, err := Bind(cpus, ranks, Policy{Unit: Core, Spread: spread})
				if err != nil {
					t.Fatalf("%v, %d ranks: %v", m, ranks, err)
				}
				seen := map[int]bool{}
				for r, b := range bs {
					if seen[b.Core] || len(b.CPUs) != m[2] {
						t.Errorf("%v by socket %v, %d ranks: rank %d on %s", m, spread, ranks, r, b)
					}
					seen[b.Core] = true
				}
			}
		}
	}
}

func TestBindOverloaded(t *testing.T) {
	for _, u := range []Unit{Core, Socket} {
		_, err := Bind(machine(2, 2, 2), 5, Policy{Unit: u})
		want := "5 ranks but 4 cores to bind them to (--bind-to " + string(u) + ")"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want %q…", u, err, want)
		}
	}
	if _, err := Bind(nil, 1, Policy{Unit: Core}); err == nil {
		t.Error("bound to no CPU")
	}
	_, err := Bind(machine(2, 3, 1), 3, Policy{Unit: Core, PE: 2})
	want := "3 ranks of 2 cores each do not fit on the 6 cores here (a rank's cores are all on one socket)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("PE=2: error %v, want %q…", err, want)
	}
	if _, err := Bind(machine(1, 4, 1), 1, Policy{Unit: Socket, PE: 2}); err == nil {
		t.Error("PE=2 bound to a socket")
	}
	_, err = Bind(machine(1, 2, 2), 5, Policy{Unit: HWThread})
	if want := "5 ranks but 4 hardware threads to bind them to (--bind-to hwthread)"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("hwthread: error %v, want %q…", err, want)
	}
	if _, err := Bind([]CPU{{ID: 0, L3: -1}}, 1, Policy{Unit: L3}); err == nil || !strings.Contains(err.Error(), "sysfs gives none for cpu 0") {
		t.Errorf("unknown L3: error %v", err)
	}
	if _, err := Bind(machine(1, 1, 1), 1, Policy{Unit: Core, Spread: Core}); err == nil || !strings.Contains(err.Error(), "cannot spread ranks over \"core\"") {
		t.Errorf("spread over cores: error %v", err)
	}
	if _, err := Bind(machine(1, 1, 1), 1, Policy{Unit: "l2cache"}); err == nil || !strings.Contains(err.Error(), "want hwthread, core, l3cache, numa, socket, board or none") {
		t.Errorf("unknown unit: error %v", err)
	}
}

// TestBindPEDisjoint: with PE=N and no overload, every rank gets N whole
// cores of one socket and no core goes to two ranks, for every count
// that fits, on several machines and both orders.
func TestBindPEDisjoint(t *testing.T) {
	for _, m := range [][3]int{{1, 4, 1}, {2, 4, 2}, {2, 5, 1}, {4, 6, 1}} {
		cpus := machine(m[0], m[1], m[2])
		for pe := 1; pe <= m[1]; pe++ {
			room := m[0] * (m[1] / pe)
			for _, spread := range []Unit{"", Socket, NUMA, L3} {
				for ranks := 1; ranks <= room; ranks++ {
					bs, err := Bind(cpus, ranks, Policy{Unit: Core, PE: pe, Spread: spread})
					if err != nil {
						t.Fatalf("%v PE=%d, %d ranks: %v", m, pe, ranks, err)
					}
					seen := map[int]bool{}
					for r, b := range bs {
						if len(b.CPUs) != pe*m[2] {
							t.Errorf("%v PE=%d, %d ranks: rank %d on %s", m, pe, ranks, r, b)
						}
						for _, cpu := range b.CPUs {
							if seen[cpu] || cpus[cpu].Socket != b.Socket {
								t.Errorf("%v PE=%d, %d ranks: rank %d on %s", m, pe, ranks, r, b)
							}
							seen[cpu] = true
						}
					}
				}
				if _, err := Bind(cpus, room+1, Policy{Unit: Core, PE: pe, Spread: spread}); err == nil {
					t.Errorf("%v PE=%d: %d ranks fit in room for %d", m, pe, room+1, room)
				}
			}
		}
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		ids  []int
		text string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"}, {[]int{1, 3}, "1,3"}} {
		if got := List(tc.ids); got != tc.text {
			t.Errorf("List(%v) = %q, want %q", tc.ids, got, tc.text)
		}
		back, err := ParseList(tc.text)
		if err != nil || !slices.Equal(back, tc.ids) {
			t.Errorf("ParseList(%q) = %v, %v", tc.text, back, err)
		}
	}
	for _, bad := range []string{"a", "3-1", "-1", "1-"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) took it", bad)
		}
	}
}

// TestBindDomainsHoldTheirCore: bound to a unit bigger than a core, each
// rank gets the whole unit that holds the core it would get bound to
// cores, so that ranks spread over the units as over the cores; bound to
// hardware threads, ranks take distinct threads while there are enough.
func TestBindDomainsHoldTheirCore(t *testing.T) {
	for _, m := range [][3]int{{1, 2, 1}, {2, 4, 2}, {4, 6, 1}} {
		cpus := machine(m[0], m[1], m[2])
		byID := map[int]CPU{}
		for _, c := range cpus {
			byID[c.ID] = c
		}
		for _, spread := range []Unit{"", Socket, NUMA, L3} {
			ranks := m[0] * m[1]
			cores, err := Bind(cpus, ranks, Policy{Unit: Core, Spread: spread})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range []Unit{L3, NUMA, Socket, Board} {
				bs, err := Bind(cpus, ranks, Policy{Unit: u, Spread: spread})
				if err != nil {
					t.Fatalf("%v %s: %v", m, u, err)
				}
				for r, b := range bs {
					for _, cpu := range cores[r].CPUs {
						if !slices.Contains(b.CPUs, cpu) {
							t.Errorf("%v %s by socket %v: rank %d on %s, not holding its core's cpu %d", m, u, spread, r, b, cpu)
						}
					}
					for _, cpu := range b.CPUs {
						c := byID[cpu]
						if u == NUMA && c.NUMA != b.Domain || u == L3 && c.L3 != b.Domain || u == Socket && c.Socket != b.Socket {
							t.Errorf("%v %s: rank %d on %s holds cpu %d of another unit", m, u, r, b, cpu)
						}
					}
				}
			}
			threads, err := Bind(cpus, len(cpus), Policy{Unit: HWThread, Spread: spread})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]bool{}
			for r, b := range threads {
				if len(b.CPUs) != 1 || seen[b.CPUs[0]] {
					t.Errorf("%v hwthread: rank %d on %s", m, r, b)
				}
				seen[b.CPUs[0]] = true
			}
		}
	}
}

// TestBindWithin: ranks are bound only to the CPUs both the affinity mask
// and the cgroup's cpuset allow; a cpuset that shares nothing with the
// mask (read from the wrong cgroup) is ignored rather than trusted.
func TestBindWithin(t *testing.T) {
	all := machine(1, 4, 2) // cpus 0-3 first threads, 4-7 second threads
	for _, tc := range []struct {
		allowed []int
		want    string
	}{
		{nil, "0-7"},
		{[]int{1, 5, 2}, "1-2,5"},
		{[]int{6, 9}, "6"},
		{[]int{8, 9}, "0-7"},
	} {
		if got := List(IDs(Within(all, tc.allowed))); got != tc.want {
			t.Errorf("Within(%v) = cpus %s, want %s", tc.allowed, got, tc.want)
		}
	}
	// Two cores left of four: a third rank does not fit without overload.
	cpus := Within(all, []int{1, 2, 5, 6})
	got, err := Bind(cpus, 2, Policy{Unit: Core})
	if err != nil || show(got) != "0: core 0 of socket 0 (cpus 1,5)\n1: core 1 of socket 0 (cpus 2,6)" {
		t.Errorf("two ranks on cores 1-2: %v\n%s", err, show(got))
	}
	if _, err := Bind(cpus, 3, Policy{Unit: Core}); err == nil || !strings.HasPrefix(err.Error(), "3 ranks but 2 cores") {
		t.Errorf("three ranks on two cores: %v", err)
	}
	got, err = Bind(cpus, 2, Policy{Unit: Socket})
	if err != nil || len(got) != 2 {
		t.Fatalf("two ranks on the socket: %v", err)
	}
	for _, b := range got {
		if List(b.CPUs) != "1-2,5-6" {
			t.Errorf("socket binding outside the allowed cpus:\n%s", show(got))
		}
	}
}
