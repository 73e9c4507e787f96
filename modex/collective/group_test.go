package collective

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// Collectives of groups that overlap complete independently, beside the
// job's, whatever the order in which their parts come: at a root with
// ranks 0 and 1 and a child 5 whose subtree holds ranks 2 and 3, groups
// "0,2" and "1-3" and the job each fence once, and each completes once,
// with the parts of its own ranks only.
func TestGroupsInFlightAtOnce(t *testing.T) {
	type event struct {
		group string
		rank  int // -1: child 5's part
	}
	groups := map[string]Members{
		"":    {Ranks: []int{0, 1}, Children: []int{5}},
		"0,2": {Ranks: []int{0}, Children: []int{5}},
		"1-3": {Ranks: []int{1}, Children: []int{5}},
	}
	var events []event
	for g, mem := range groups {
		for _, r := range mem.Ranks {
			events = append(events, event{g, r})
		}
		events = append(events, event{g, -1})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		m := New(true)
		for g, mem := range groups {
			m.Join(g, func() Members { mem.Toward = func(int) int { return Nowhere }; return mem })
		}
		done := map[string][]string{}
		for _, e := range events {
			key := fmt.Sprintf("%s/%d", e.group, e.rank)
			var acts []Action
			if e.rank < 0 {
				acts = m.FromChild(5, ID{Group: e.group, Op: Fence, Seq: 1}, kv(key))
			} else {
				acts = m.Enter(e.group, Fence, e.rank, kv(key))
			}
			for _, a := range acts {
				if d, ok := a.(Done); ok {
					if done[d.ID.Group] != nil {
						t.Fatalf("trial %d: %v completed twice", trial, d.ID)
					}
					done[d.ID.Group] = keys(d.Part)
				}
			}
		}
		for g, mem := range groups {
			want := []string{g + "/-1"}
			for _, r := range mem.Ranks {
				want = append(want, fmt.Sprintf("%s/%d", g, r))
			}
			slices.Sort(want)
			if !slices.Equal(done[g], want) {
				t.Fatalf("trial %d: group %q completed with %v, want %v", trial, g, done[g], want)
			}
		}
		if open := m.Open(); len(open) != 0 {
			t.Fatalf("trial %d: still open: %v", trial, open)
		}
	}
}

// A member that leaves before entering fails the group's collective: at
// a leaf whose only member left after fence 1, fence 2 goes up, naming
// it, as soon as the parent probes for it.
func TestLeftMemberFailsTheNextCollective(t *testing.T) {
	m := New(false)
	m.Join("4,9", members([]int{9}, nil))
	if _, ok := only[SendUp](t, m.Enter("4,9", Fence, 9, kv("a"))); !ok {
		t.Fatal("fence 1 did not go up")
	}
	if acts := m.Left("4,9", 9); len(acts) != 0 {
		t.Fatalf("Left did %v before a probe", acts)
	}
	id := ID{Group: "4,9", Op: Fence, Seq: 2}
	want := []Action{SendUp{id, Part{Gone: []int{9}}}}
	if acts := m.Probed(id); !reflect.DeepEqual(acts, want) {
		t.Fatalf("got %v, want %v", acts, want)
	}
	if acts := m.Probed(id); len(acts) != 0 {
		t.Fatalf("a second probe did %v", acts)
	}
}

// A probe opens the collective and goes on down to the children it waits
// for; one that comes before the Join waits for it. The job's
// collectives are never probed: a daemon whose ranks all left says so
// once instead (ChildLeft).
func TestProbeGoesDown(t *testing.T) {
	m := New(false)
	id := ID{Group: "1-3", Op: Fence, Seq: 1}
	if acts := m.Probed(id); len(acts) != 0 {
		t.Fatalf("a probe before the Join did %v", acts)
	}
	want := []Action{Probe{2, id}, Probe{4, id}}
	if acts := m.Join("1-3", members([]int{1}, []int{4, 2})); !reflect.DeepEqual(acts, want) {
		t.Fatalf("Join: got %v, want %v", acts, want)
	}
	m.Join("", members([]int{1}, []int{4, 2}))
	if acts := m.Enter("", Fence, 1, kv("r1")); len(acts) != 0 {
		t.Fatalf("the job's fence did %v", acts)
	}
	if acts := m.Probed(fence(1)); len(acts) != 0 {
		t.Fatalf("a probe of the job's fence did %v", acts)
	}
}

// At the root, a member that left makes the open collective complete
// without it, failed for everyone; a rank outside the group changes
// nothing.
func TestLeftMemberFailsTheOpenCollectiveForAll(t *testing.T) {
	m := New(true)
	m.Join("0,1", members([]int{0, 1}, []int{3}))
	m.Enter("0,1", Fence, 0, kv("r0"))
	m.FromChild(3, ID{Group: "0,1", Op: Fence, Seq: 1}, Part{})
	acts := m.Left("0,1", 1)
	id := ID{Group: "0,1", Op: Fence, Seq: 1}
	res := Part{KVs: kv("r0").KVs, Gone: []int{1}}
	want := []Action{SendDown{3, id, res}, Done{id, res}}
	if !reflect.DeepEqual(acts, want) {
		t.Fatalf("got %v, want %v", acts, want)
	}
	if acts := m.Left("0,1", 7); len(acts) != 0 {
		t.Fatalf("a rank outside the group did %v", acts)
	}
}
