package protocol

import (
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"prsh/internal/jsonwire"
)

// RankMap is the daemon id of each rank. It travels in JSON as one string
// of runs separated by commas, each "first[-last][*count]": the ids first,
// first+1, …, last, each count times over, so "1-3*4" is four ranks on
// daemon 1, then four on 2 and four on 3. Every daemon decodes the map
// whole, on the launch's critical path: this way the usual placements
// cost it a few bytes, not a number per rank. A placement by slot is a
// run ("1-512*4"); one by node, a run per round ("1-512,1-512"). No form
// repeats a run: a map by node has a run per rank on a node, which the
// node's cores bound, so a repeat would save little for the syntax.
// A map the string cannot hold (empty, longer than maxWireRanks, or with
// a negative id) is a JSON array of numbers, as a []int would be; either
// form decodes.
type RankMap []int

// Holders says, for each of daemons ids, whether a rank is placed on it.
func (m RankMap) Holders(daemons int) []bool {
	holds := make([]bool, daemons)
	for _, d := range m {
		if d >= 0 && d < daemons {
			holds[d] = true
		}
	}
	return holds
}

// maxWireRanks bounds what the string form may expand to, and so the
// memory a decoded map takes (128 MiB): the most ranks mpirun places,
// job.MaxRanks (a test checks they agree; protocol cannot import job,
// which reads files).
const maxWireRanks = 1 << 24

// rankRun is count ranks on each daemon from first to last.
type rankRun struct{ first, last, count int }

// MarshalJSON writes the string form, or the array if it cannot hold m.
func (m RankMap) MarshalJSON() ([]byte, error) {
	if len(m) == 0 || len(m) > maxWireRanks {
		return json.Marshal([]int(m))
	}
	b := []byte{'"'}
	for r := range rankRuns(m) {
		if r.first < 0 { // a run's least id
			return json.Marshal([]int(m))
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(r.first), 10)
		if r.last > r.first {
			b = strconv.AppendInt(append(b, '-'), int64(r.last), 10)
		}
		if r.count > 1 {
			b = strconv.AppendInt(append(b, '*'), int64(r.count), 10)
		}
	}
	return append(b, '"'), nil
}

// rankRuns yields m's runs: its blocks of one id, those of the same length
// with ids counting up by one joined, so that a map has one form.
func rankRuns(m []int) iter.Seq[rankRun] {
	return func(yield func(rankRun) bool) {
		for i := 0; i < len(m); {
			r := rankRun{m[i], m[i], repeats(m[i:])}
			for i += r.count; i < len(m) && r.last < math.MaxInt && m[i] == r.last+1 && repeats(m[i:]) == r.count; i += r.count {
				r.last++
			}
			if !yield(r) {
				return
			}
		}
	}
}

// repeats is how many times s[0] is at the start of s.
func repeats(s []int) int {
	n := 1
	for n < len(s) && s[n] == s[0] {
		n++
	}
	return n
}

// UnmarshalJSON reads either form; null is no map.
func (m *RankMap) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return json.Unmarshal(b, (*[]int)(m))
	}
	s, err := jsonwire.String(b)
	if err != nil {
		return err
	}
	ranks, err := expandRanks(s)
	if err != nil {
		return fmt.Errorf("rank map: %w", err)
	}
	*m = ranks
	return nil
}

// expandRanks reads the string form. It reads it twice, to count the
// ranks, refusing more than maxWireRanks, and then to allocate them once.
func expandRanks(s string) (RankMap, error) {
	n := 0
	for r, err := range parseRankRuns(s) {
		if err != nil {
			return nil, err
		}
		left := maxWireRanks - n
		if r.last-r.first >= left || r.count > left/(r.last-r.first+1) {
			return nil, fmt.Errorf("more than %d ranks", maxWireRanks)
		}
		n += (r.last - r.first + 1) * r.count
	}
	m, k := make(RankMap, n), 0
	for r := range parseRankRuns(s) { // no error: read whole above
		for id := range r.last - r.first + 1 {
			ranks := m[k : k+r.count]
			for i := range ranks {
				ranks[i] = r.first + id
			}
			k += r.count
		}
	}
	return m, nil
}

// parseRankRuns yields the runs of s, separated by commas, or an error
// for the first that does not parse.
func parseRankRuns(s string) iter.Seq2[rankRun, error] {
	return func(yield func(rankRun, error) bool) {
		for {
			r, end, ok := parseRankRun(s)
			if !ok {
				item, _, _ := strings.Cut(s, ",")
				yield(r, fmt.Errorf("run %.40q: want first[-last][*count], ids counting up, count at least 1", item))
				return
			}
			if !yield(r, nil) || end == len(s) {
				return
			}
			s = s[end+1:]
		}
	}
}

// parseRankRun reads the run at the start of s, "first[-last][*count]",
// which ends s or a comma at end.
func parseRankRun(s string) (r rankRun, end int, ok bool) {
	r.first, end, ok = decimal(s, 0)
	r.last, r.count = r.first, 1
	if ok && end < len(s) && s[end] == '-' {
		r.last, end, ok = decimal(s, end+1)
	}
	if ok && end < len(s) && s[end] == '*' {
		r.count, end, ok = decimal(s, end+1)
	}
	return r, end, ok && r.last >= r.first && r.count > 0 && (end == len(s) || s[end] == ',')
}

// decimal reads the int without a sign at s[i:], and where it ends. Read
// in place, not cut out for strconv, a map of a run per rank decodes in
// a third of the time.
func decimal(s string, i int) (v, end int, ok bool) {
	for end = i; end < len(s) && '0' <= s[end] && s[end] <= '9'; end++ {
		d := int(s[end] - '0')
		if v > (math.MaxInt-d)/10 {
			return 0, end, false
		}
		v = v*10 + d
	}
	return v, end, end > i
}
