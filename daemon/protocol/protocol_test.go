package protocol

import (
	"reflect"
	"testing"

	"prsh/modex"
	"prsh/modex/collective"
)

// Every message type has one kind, and Decode(Encode(m)) gives m back.
func TestMessageTable(t *testing.T) {
	seen := map[reflect.Type]bool{}
	for kind, msg := range kinds {
		if msg == nil {
			continue
		}
		typ := reflect.TypeOf(msg)
		if seen[typ] {
			t.Fatalf("%v has two kinds", typ)
		}
		seen[typ] = true
		if k, ok := KindOf(msg); !ok || int(k) != kind {
			t.Fatalf("KindOf(%v) = %d, %v; want %d", typ, k, ok, kind)
		}
	}
	for _, msg := range []Message{
		Hello{ID: 2, Addr: "tcp://127.0.0.1:1"},
		Launch{Argv: []string{"a", "b c"}, RankNode: []int{1, 1, 2}, StdinRank: StdinAll, MergeStderr: true},
		Launch{Argv: []string{"a"}, RankNode: []int{1, 2, 2}, More: []App{{First: 1, Argv: []string{"b"}, Env: []string{"X=1"}, Wdir: "/w", WdirSet: true}}},
		Signal{Sig: 19, Ack: true, Seq: 7},
		Launch{Argv: []string{"a"}, RankNode: []int{1}, Job: 4},
		Milestone{Kind: Exited, Job: 4},
		Failure{Msg: "node1: rank 0 exited with status 3", Status: 3, Job: 4},
		JobKill{Job: 4},
		JobEnd{Job: 4},
		SignalAck{Seq: 7},
		Pending{Missing: 12, Slow: []int{5, 17, 230}},
		CollectiveUp{ID: collective.ID{Op: collective.Fence, Seq: 2}, Part: collective.Part{KVs: []modex.KV{{Key: "k", Value: "v"}}}},
		CollectiveUp{ID: collective.ID{Group: "g", Op: collective.Allgather, Seq: 1}, Part: collective.Part{Values: []collective.RankValue{{Rank: 3, Value: ""}}}},
		CollectiveDown{ID: collective.ID{Op: collective.Allgather, Seq: 1}, Part: collective.Part{Ordered: []string{"a", ""}}},
		CollectiveDown{ID: collective.ID{Op: collective.Ring, Seq: 1}, Part: collective.Part{Ring: []RingEntry{{Rank: 1, Count: 4, Left: "l", Right: "r"}}}},
		CollectiveDown{ID: collective.ID{Op: collective.Ring, Seq: 1}},
	} {
		kind, payload, err := Encode(msg)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(kind, payload)
		if err != nil || !reflect.DeepEqual(back, msg) {
			t.Fatalf("%#v came back as %#v (%v)", msg, back, err)
		}
	}
	if _, err := Decode(0, []byte("{}")); err == nil {
		t.Fatal("kind 0 decoded")
	}
	if _, err := Decode(byte(len(kinds)), []byte("{}")); err == nil {
		t.Fatal("a kind past the table decoded")
	}
}

// A reduction is ready once, when its own part and every child's are in;
// a child that fails is not waited for, and an adopted one is.
func TestReduction(t *testing.T) {
	r := newReduction([]int{1, 2})
	r.local = true
	if r.ready() {
		t.Fatal("ready with two children missing")
	}
	r.add(1)
	r.join(5) // adopted in place of a failed child
	r.drop(2)
	if r.ready() {
		t.Fatal("ready while the adopted child is missing")
	}
	if !r.takes(5) || r.takes(1) {
		t.Fatal("takes: wrong children expected")
	}
	r.add(5)
	if !r.ready() || r.ready() {
		t.Fatal("want ready exactly once")
	}
	r.join(6)
	if r.takes(6) {
		t.Fatal("a finished reduction took a new child")
	}
}

// AppOf: ranks below the first further program run the Launch's own, the
// others the last program whose First they reached.
func TestAppOf(t *testing.T) {
	l := Launch{Argv: []string{"a"}, Env: []string{"E=a"}, Wdir: "/a", More: []App{
		{First: 1, Argv: []string{"b"}}, {First: 3, Argv: []string{"c"}, WdirSet: true},
	}}
	for rank, want := range []struct {
		argv string
		num  int
	}{{"a", 0}, {"b", 1}, {"b", 1}, {"c", 2}, {"c", 2}} {
		app, num := l.AppOf(rank)
		if app.Argv[0] != want.argv || num != want.num {
			t.Errorf("AppOf(%d) = %v, %d; want %s, %d", rank, app.Argv, num, want.argv, want.num)
		}
	}
	if app, _ := l.AppOf(0); app.Env[0] != "E=a" || app.Wdir != "/a" {
		t.Errorf("AppOf(0) = %+v, want the Launch's own environment and directory", app)
	}
}
