package protocol

import (
	"reflect"
	"strings"
	"testing"

	"prsh/modex"
	"prsh/modex/collective"
	"prsh/routed"
)

// FuzzDecodeMessage: whatever kind byte and payload a peer sends, decode
// never panics; what it accepts has the kind it came with, and survives
// being sent again unchanged.
func FuzzDecodeMessage(f *testing.F) {
	for _, msg := range []Message{
		Hello{ID: 3, Addr: "tcp://127.0.0.1:4000"},
		Welcome{Job: JobSpec{Daemons: 4, Hosts: []string{"a", "node8", "node9", "node10"}}},
		Welcome{Job: JobSpec{Daemons: 3, Hosts: []string{"a", "[fe80::1]", "c"}}},
		Addrs{},
		Addrs{Entries: routed.EntriesOf(routed.Entry{ID: 1, Addr: "tcp://127.0.0.2:1"}, routed.Entry{ID: 2, Addr: ""}, routed.Entry{ID: 7, Addr: "tcp://127.0.0.8:1"})},
		Launch{Argv: []string{"hostname"}, RankNode: []int{1, 1, 2, 2, 3, 1, 2, 3}, StdinRank: StdinNone},
		Launch{Argv: []string{"hostname"}, RankNode: []int{2, -1}},
		Failure{Msg: "node002: rank 1 exited with status 5", Status: 5},
		Milestone{Kind: Started},
		Teardown{Kill: true},
		Signal{Sig: 10, Ack: true, Seq: 2},
		SignalAck{Seq: 2},
		Skipped{ID: 4, Msg: "node004: unreachable"},
		CollectiveUp{ID: collective.ID{Op: collective.Ring, Seq: 1}, Part: collective.Part{Ring: []RingEntry{{Rank: 2, Count: 1, Left: "a", Right: "b"}}}},
		CollectiveDown{ID: collective.ID{Group: "g", Op: collective.Fence, Seq: 3}, Part: collective.Part{KVs: []modex.KV{{Key: "k", Value: "v"}}}},
		CollectiveUp{ID: collective.ID{Group: "0-2,5", Op: collective.Fence, Seq: 2}, Part: collective.Part{Gone: []int{1, 5}}, Job: 3},
		CollectiveProbe{ID: collective.ID{Group: "0-2,5", Op: collective.Fence, Seq: 2}, Job: 3},
		CollectiveUp{ID: collective.ID{Group: "1:0-2|4:1,3", Op: collective.Fence, Seq: 1}, Job: 1},
		NamePublish{ID: 1, From: 3, Job: 2, Rank: 1, Names: []Name{{Key: "port", Bytes: []byte{0, 0xff, 'q'}}}, JobOnly: true},
		NameLookup{ID: 2, From: 3, Job: 2, Keys: []string{"a", "b"}, Wait: true, TimeoutMS: 600000},
		NameUnpublish{ID: 3, From: 1, Job: 1, Rank: 0},
		NameReply{ID: 2, To: 3, Names: []Name{{Key: "a", Value: "1", Job: 1}}, Err: NameTimedOut},
		ChildJobRequest{ID: 1, From: 2, Job: 0, Rank: 1, Req: modex.SpawnRequest{
			Apps:   []modex.SpawnApp{{Argv: []string{"a", "x y"}, Env: []string{"K=V"}, NP: 4, Info: map[string]string{"host": "n1,n2"}}, {Argv: []string{"b"}, NP: 1}},
			Preput: map[string]string{"PARENT_ROOT_PORT_NAME": "p"}, Info: map[string]string{"pmix.pers": "ompi"}}},
		ChildJobReply{ID: 1, To: 2, Child: 3},
		ChildJobReply{ID: 1, To: 2, Err: "a child job of 9 ranks, but only 4 slots free"},
		Launch{Argv: []string{"child"}, RankNode: []int{2, 3}, Job: 2, Parent: &ParentRank{Job: 1, Rank: 0, Name: "prsh_1_1"}, Preput: map[string]string{"k": "v"}},
	} {
		kind, payload, err := Encode(msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(kind, payload)
	}
	f.Add(byte(0), []byte("{}"))
	f.Add(byte(4), []byte(`{"Argv":`))
	f.Fuzz(func(t *testing.T, kind byte, payload []byte) {
		msg, err := Decode(kind, payload)
		if err != nil {
			return
		}
		k, ok := KindOf(msg)
		if !ok || k != kind {
			t.Fatalf("Decode(%d, %q) gave a %T of kind %d", kind, payload, msg, k)
		}
		k2, again, err := Encode(msg)
		if err != nil || k2 != kind {
			t.Fatalf("re-encoding %#v: kind %d, %v", msg, k2, err)
		}
		back, err := Decode(k2, again)
		if err != nil || !reflect.DeepEqual(absentIfEmpty(back), absentIfEmpty(msg)) {
			t.Fatalf("%#v came back as %#v (%v)", msg, back, err)
		}
	})
}

// absentIfEmpty is a copy of msg in which every empty slice or map of a
// field tagged omitempty is nil: the wire says the two alike (absent).
func absentIfEmpty(msg Message) any {
	v := reflect.New(reflect.TypeOf(msg)).Elem()
	v.Set(reflect.ValueOf(msg))
	clearEmpty(v)
	return v.Interface()
}

func clearEmpty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			clearEmpty(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			clearEmpty(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f, field := v.Type().Field(i), v.Field(i)
			if !f.IsExported() {
				continue
			}
			if k := field.Kind(); (k == reflect.Slice || k == reflect.Map) && field.Len() == 0 && strings.Contains(f.Tag.Get("json"), "omitempty") {
				field.SetZero()
				continue
			}
			clearEmpty(field)
		}
	}
}
