package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"prsh/job"
)

// ids is first, first+1, …, last, each count times over.
func ids(first, last, count int) RankMap {
	var m RankMap
	for id := first; id <= last; id++ {
		for range count {
			m = append(m, id)
		}
	}
	return m
}

func TestRankMapWire(t *testing.T) {
	tests := []struct {
		m    RankMap
		wire string
	}{
		{nil, `null`},
		{RankMap{}, `[]`},
		{RankMap{0}, `"0"`},
		{RankMap{1, 1, 1, 1}, `"1*4"`},
		{ids(1, 512, 1), `"1-512"`},
		{ids(1, 3, 4), `"1-3*4"`},
		{slices.Concat(ids(1, 3, 4), RankMap{4, 4}), `"1-3*4,4*2"`},
		{slices.Concat(ids(1, 4, 1), ids(1, 4, 1), ids(1, 2, 1)), `"1-4,1-4,1-2"`},
		{RankMap{1, 2, 2, 3, 3}, `"1,2-3*2"`},
		{RankMap{1, 1, 2, 3}, `"1*2,2-3"`},
		{RankMap{3, 2, 1, 1}, `"3,2,1*2"`},
		{RankMap{5, 5, 6, 6, 8, 8}, `"5-6*2,8*2"`},
		{RankMap{7, 7, 7, 7}, `"7*4"`},
		{RankMap{math.MaxInt - 1, math.MaxInt, math.MaxInt, 0}, fmt.Sprintf(`"%d,%d*2,0"`, math.MaxInt-1, math.MaxInt)},
		{RankMap{1, -1}, `[1,-1]`},
	}
	for _, tt := range tests {
		w, err := json.Marshal(tt.m)
		if err != nil || string(w) != tt.wire {
			t.Errorf("%v is %s, %v; want %s", tt.m, w, err, tt.wire)
		}
		var back RankMap
		if err := json.Unmarshal(w, &back); err != nil || !reflect.DeepEqual(back, tt.m) {
			t.Errorf("%s came back as %v, %v", w, back, err)
		}
	}
}

// TestRankMapLong: the string form holds maxWireRanks ranks, and a longer
// map is an array.
func TestRankMapLong(t *testing.T) {
	wire := fmt.Sprintf(`"1-%d*64"`, maxWireRanks/64)
	var m RankMap
	if err := json.Unmarshal([]byte(wire), &m); err != nil || len(m) != maxWireRanks || m[0] != 1 || m[64] != 2 || m[len(m)-1] != maxWireRanks/64 {
		t.Fatalf("%s decodes to %d ranks, %v", wire, len(m), err)
	}
	if w, err := json.Marshal(m); err != nil || string(w) != wire {
		t.Errorf("%s is sent as %.60s, %v", wire, w, err)
	}
	if w, err := json.Marshal(append(m, 1)); err != nil || w[0] != '[' {
		t.Errorf("%d ranks are %.20s…, %v; want an array", len(m)+1, w, err)
	}
}

// TestRankMapBound: the string form holds any map mpirun builds.
func TestRankMapBound(t *testing.T) {
	if maxWireRanks != job.MaxRanks {
		t.Errorf("maxWireRanks = %d, job.MaxRanks = %d", maxWireRanks, job.MaxRanks)
	}
}

func TestRankMapDecode(t *testing.T) {
	tests := []struct {
		wire string
		want RankMap
	}{
		{`"2-2*1,007"`, RankMap{2, 7}},
		{`"1-2,2-3"`, RankMap{1, 2, 2, 3}},
		{`"\u0031-3"`, RankMap{1, 2, 3}},
		{`[1,1,2]`, RankMap{1, 1, 2}},
		{` [3]`, RankMap{3}},
		{fmt.Sprintf(`"%d*2"`, math.MaxInt), RankMap{math.MaxInt, math.MaxInt}},
	}
	for _, tt := range tests {
		var m RankMap
		if err := json.Unmarshal([]byte(tt.wire), &m); err != nil || !reflect.DeepEqual(m, tt.want) {
			t.Errorf("%s decodes to %v, %v", tt.wire, m, err)
		}
	}
}

func TestRankMapDecodeErrors(t *testing.T) {
	tests := []struct{ wire, want string }{
		{`"1*999999999999"`, "more than 16777216 ranks"},
		{`"1-262144*64,1"`, "more than 16777216 ranks"},
		{fmt.Sprintf(`"0-%d"`, math.MaxInt), "more than 16777216 ranks"},
		{fmt.Sprintf(`"0-%d*%[1]d"`, math.MaxInt), "more than 16777216 ranks"},
		{`"99999999999999999999"`, `run "99999999999999999999"`},
		{`""`, `run ""`},
		{`"1,"`, `run ""`},
		{`"-1"`, `run "-1"`},
		{`"+1"`, `run "+1"`},
		{`"1*-2"`, `run "1*-2"`},
		{`"1*0"`, `run "1*0"`},
		{`"3-1"`, `run "3-1"`},
		{`"1-2-3"`, `run "1-2-3"`},
		{`"1*2*3"`, `run "1*2*3"`},
		{`"1 "`, `run "1 "`},
		{`"1_0"`, `run "1_0"`},
		{`"x"`, `run "x"`},
		{`5`, "cannot unmarshal number"},
		{`["1"]`, "cannot unmarshal string"},
		{`{}`, "cannot unmarshal object"},
	}
	for _, tt := range tests {
		var m RankMap
		if err := json.Unmarshal([]byte(tt.wire), &m); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.40s: error %v, want %q", tt.wire, err, tt.want)
		}
	}
}

// TestRankMapPlacements: what mpirun's mapper places on nodes of equal
// slots is a run by slot, and a run per round by node.
func TestRankMapPlacements(t *testing.T) {
	for _, nodes := range []int{2, 7, 1000} {
		for _, slots := range []int{1, 4, 32} {
			hosts := make([]job.Host, nodes)
			for i := range hosts {
				hosts[i] = job.Host{Name: fmt.Sprintf("n%d", i), Slots: slots}
			}
			for mapBy, want := range map[job.MapBy]int{job.MapBySlot: 1, job.MapByNode: slots} {
				m := placement(t, hosts, job.Options{MapBy: mapBy})
				if w, _ := json.Marshal(m); strings.Count(string(w), ",")+1 != want {
					t.Errorf("%d nodes of %d slots by %v are %.80s, want %d runs", nodes, slots, mapBy, w, want)
				}
			}
		}
	}
}

// placement is the rank map mpirun sends for hosts and opt.
func placement(t *testing.T, hosts []job.Host, opt job.Options) RankMap {
	t.Helper()
	jm, err := job.Build(hosts, opt)
	if err != nil {
		t.Fatal(err)
	}
	m := make(RankMap, len(jm.RankNode))
	for r, node := range jm.RankNode {
		m[r] = node + 1
	}
	return m
}

// TestRankMapRoundTrip: any map, placed by mpirun's mapper or not,
// decodes to itself.
func TestRankMapRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		hosts := make([]job.Host, 1+r.IntN(50))
		for i := range hosts {
			hosts[i] = job.Host{Name: fmt.Sprintf("n%d", i), Slots: 1 + r.IntN(8)}
		}
		opt := job.Options{NP: r.IntN(600), MapBy: job.MapBy(r.IntN(2)), Oversubscribe: true}
		if r.IntN(4) == 0 {
			opt.NPerNode, opt.NP = 1+r.IntN(8), 0
		}
		rankMapRoundTrip(t, placement(t, hosts, opt))
		rankMapRoundTrip(t, randomRankMap(r))
	}
}

// rankMapRoundTrip fails t unless m, sent, decodes to itself.
func rankMapRoundTrip(t *testing.T, m RankMap) {
	t.Helper()
	w, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("%v: %v", m, err)
	}
	var back RankMap
	if err := json.Unmarshal(w, &back); err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("%v went as %s and came back as %v, %v", m, w, back, err)
	}
}

// randomRankMap mixes runs of a few ids, up or down (and up past the
// largest int, to the least), each a few times, with ids anywhere,
// negative ones now and then.
func randomRankMap(r *rand.Rand) RankMap {
	if r.IntN(20) == 0 {
		return nil
	}
	m := RankMap{}
	for range r.IntN(8) {
		first, step, count := []int{0, 1, 9, math.MaxInt - 2}[r.IntN(4)], 1-r.IntN(3), 1+r.IntN(3)
		for i := range 1 + r.IntN(5) {
			id := first + step*i
			if r.IntN(8) == 0 {
				id = r.IntN(20) - 1
			}
			for range count {
				m = append(m, id)
			}
		}
	}
	return m
}

// FuzzRankMapDecode: no input panics the decoder, and whatever decodes is
// sent again as something that decodes to the same map.
func FuzzRankMapDecode(f *testing.F) {
	for _, s := range []string{`"1-512"`, `"1-3*4,4*2"`, `"1-4,1-4,1-2"`, `"3,2,1*2"`, `"0"`, `""`, `null`, `[]`,
		`[1,-1]`, `"1*999999999999"`, `"1-262144*64,1"`, `"9223372036854775807*2"`, `"\u0031-3"`, `"1-2-3"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m RankMap
		if json.Unmarshal(b, &m) == nil {
			rankMapRoundTrip(t, m)
		}
	})
}

// BenchmarkRankMapWire encodes and decodes 100,000 ranks as each daemon's
// Launch carries them: one per node (1..100000) and four per node by slot
// in the wire form ("runs") and in the former one ("array", a []int), and
// in the wire form one per node in an order that makes no run ("shuffled").
func BenchmarkRankMapWire(b *testing.B) {
	const np = 100_000
	shuffled := ids(1, np, 1)
	rand.New(rand.NewPCG(1, 2)).Shuffle(np, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, perNode := range []int{1, 4} {
		m := ids(1, np/perNode, perNode)
		b.Run(fmt.Sprintf("runs/%dx%d", np/perNode, perNode), func(b *testing.B) { benchRankMap(b, m, new(RankMap)) })
		b.Run(fmt.Sprintf("array/%dx%d", np/perNode, perNode), func(b *testing.B) { benchRankMap(b, []int(m), new([]int)) })
	}
	b.Run(fmt.Sprintf("shuffled/%dx1", np), func(b *testing.B) { benchRankMap(b, shuffled, new(RankMap)) })
}

// benchRankMap encodes m and decodes it into back.
func benchRankMap[M RankMap | []int](b *testing.B, m M, back *M) {
	var w []byte
	for b.Loop() {
		w, _ = json.Marshal(m)
		if err := json.Unmarshal(w, back); err != nil || len(*back) != len(m) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(w)), "wire-bytes")
}
