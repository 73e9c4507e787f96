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
// the second (cpu 0 and cpu 8 share core 0 of socket 0 on 2×4×2).
func machine(sockets, cores, threads int) []CPU {
	var cpus []CPU
	for th := range threads {
		for s := range sockets {
			for c := range cores {
				cpus = append(cpus, CPU{ID: th*sockets*cores + s*cores + c, Core: c, Socket: s})
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
		{"core by socket, 2×4×2, 5 ranks", machine(2, 4, 2), 5, Policy{Unit: Core, BySocket: true},
			"0: core 0 of socket 0 (cpus 0,8)\n1: core 4 of socket 1 (cpus 4,12)\n2: core 1 of socket 0 (cpus 1,9)\n3: core 5 of socket 1 (cpus 5,13)\n4: core 2 of socket 0 (cpus 2,10)"},
		{"socket, 2×4×2, 5 ranks by core", machine(2, 4, 2), 5, Policy{Unit: Socket},
			"0: socket 0 (cpus 0-3,8-11)\n1: socket 0 (cpus 0-3,8-11)\n2: socket 0 (cpus 0-3,8-11)\n3: socket 0 (cpus 0-3,8-11)\n4: socket 1 (cpus 4-7,12-15)"},
		{"socket by socket, 2×4×2, 3 ranks", machine(2, 4, 2), 3, Policy{Unit: Socket, BySocket: true},
			"0: socket 0 (cpus 0-3,8-11)\n1: socket 1 (cpus 4-7,12-15)\n2: socket 0 (cpus 0-3,8-11)"},
		{"core, 1×2×1 (this testbed)", machine(1, 2, 1), 2, Policy{Unit: Core},
			"0: core 0 of socket 0 (cpus 0)\n1: core 1 of socket 0 (cpus 1)"},
		{"overload allowed wraps", machine(1, 2, 2), 3, Policy{Unit: Core, Overload: true},
			"0: core 0 of socket 0 (cpus 0,2)\n1: core 1 of socket 0 (cpus 1,3)\n2: core 0 of socket 0 (cpus 0,2)"},
		// A cpuset that left the job 3 CPUs of 2 sockets: socket 1 has
		// one core, so by socket its turn is skipped once it is full.
		{"unequal sockets by socket", []CPU{{0, 0, 0}, {1, 1, 0}, {5, 3, 1}}, 3, Policy{Unit: Core, BySocket: true},
			"0: core 0 of socket 0 (cpus 0)\n1: core 2 of socket 1 (cpus 5)\n2: core 1 of socket 0 (cpus 1)"},
		// Sockets and cores are ordered by id, whatever order the CPUs come in.
		{"ids out of order", []CPU{{7, 3, 1}, {2, 1, 0}, {6, 3, 1}, {3, 1, 0}}, 2, Policy{Unit: Core},
			"0: core 0 of socket 0 (cpus 2-3)\n1: core 1 of socket 1 (cpus 6-7)"},
		{"PE=2, 2×4×1, 3 ranks", machine(2, 4, 1), 3, Policy{Unit: Core, PE: 2},
			"0: cores 0-1 of socket 0 (cpus 0-1)\n1: cores 2-3 of socket 0 (cpus 2-3)\n2: cores 4-5 of socket 1 (cpus 4-5)"},
		{"PE=2 by socket, 2×4×1, 3 ranks", machine(2, 4, 1), 3, Policy{Unit: Core, PE: 2, BySocket: true},
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
		for _, bySocket := range []bool{false, true} {
			for ranks := 1; ranks <= m[0]*m[1]; ranks++ {
				bs, err := Bind(cpus, ranks, Policy{Unit: Core, BySocket: bySocket})
				if err != nil {
					t.Fatalf("%v, %d ranks: %v", m, ranks, err)
				}
				seen := map[int]bool{}
				for r, b := range bs {
					if seen[b.Core] || len(b.CPUs) != m[2] {
						t.Errorf("%v by socket %v, %d ranks: rank %d on %s", m, bySocket, ranks, r, b)
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
}

// TestBindPEDisjoint: with PE=N and no overload, every rank gets N whole
// cores of one socket and no core goes to two ranks, for every count
// that fits, on several machines and both orders.
func TestBindPEDisjoint(t *testing.T) {
	for _, m := range [][3]int{{1, 4, 1}, {2, 4, 2}, {2, 5, 1}, {4, 6, 1}} {
		cpus := machine(m[0], m[1], m[2])
		for pe := 1; pe <= m[1]; pe++ {
			room := m[0] * (m[1] / pe)
			for _, bySocket := range []bool{false, true} {
				for ranks := 1; ranks <= room; ranks++ {
					bs, err := Bind(cpus, ranks, Policy{Unit: Core, PE: pe, BySocket: bySocket})
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
				if _, err := Bind(cpus, room+1, Policy{Unit: Core, PE: pe, BySocket: bySocket}); err == nil {
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
