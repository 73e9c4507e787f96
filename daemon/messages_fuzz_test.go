package daemon

import (
	"reflect"
	"testing"
)

// FuzzDecodeMessage: whatever kind byte and payload a peer sends, decode
// never panics; what it accepts has the kind it came with, and survives
// being sent again unchanged.
func FuzzDecodeMessage(f *testing.F) {
	for _, msg := range []any{
		Hello{ID: 3, Addr: "tcp://127.0.0.1:4000"},
		Welcome{Job: JobSpec{Daemons: 3, Hosts: []string{"a", "b", "c"}}},
		Addrs{},
		Launch{Argv: []string{"hostname"}, RankNode: []int{1, 2}, StdinRank: StdinNone},
		Failure{Msg: "node002: rank 1 exited with status 5", Status: 5},
		Milestone{Kind: Started},
		Teardown{Kill: true},
		Signal{Sig: 10, Ack: true},
		SignalAck{},
		Skipped{ID: 4, Msg: "node004: unreachable"},
	} {
		kind, payload, err := encode(msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(kind, payload)
	}
	f.Add(byte(0), []byte("{}"))
	f.Add(kindLaunch, []byte(`{"Argv":`))
	f.Fuzz(func(t *testing.T, kind byte, payload []byte) {
		msg, err := decode(kind, payload)
		if err != nil {
			return
		}
		k, ok := kindOf(msg)
		if !ok || k != kind {
			t.Fatalf("decode(%d, %q) gave a %T of kind %d", kind, payload, msg, k)
		}
		k2, again, err := encode(msg)
		if err != nil || k2 != kind {
			t.Fatalf("re-encoding %#v: kind %d, %v", msg, k2, err)
		}
		back, err := decode(k2, again)
		if err != nil || !reflect.DeepEqual(back, msg) {
			t.Fatalf("%#v came back as %#v (%v)", msg, back, err)
		}
	})
}
