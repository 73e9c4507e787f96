package modex

import (
	"strconv"
	"strings"
)

// MaxMappingLen is the longest PMI_process_mapping value MPICH's PMI-1
// client can take. It reads the value into a buffer of its effective value
// length, 674 bytes with the 256/64/1024 maxima our servers announce, and
// the terminating NUL needs one of them. A longer value crashed the client
// (a failed copy, then a double free): see pmi/WIRE.md §5.
const MaxMappingLen = 673

// block is one (start,count,ppn) triple: count nodes numbered start,
// start+1, … each holding ppn consecutive ranks.
type block struct{ start, count, ppn int }

// ProcessMapping builds MPICH's PMI_process_mapping,
// "(vector,(node,count,ppn),...)", from the daemon id that runs each rank
// (rankNode[r] is rank r's daemon). Nodes are numbered in order of first
// appearance, so rank 0 is always on node 0. Runs of ranks on one node
// become blocks, neighbouring nodes with equal runs merge into one triple,
// and the shortest prefix of triples that the client's cyclic reading
// (it starts over from the first triple when they run out) expands back
// into the exact placement is kept. That gives what Hydra prints for its
// placements: by slot with 2 ranks on each of 2 hosts "(vector,(0,2,2))",
// by node "(vector,(0,2,1))", one host "(vector,(0,1,N))".
//
// It returns "" for no ranks, and when the mapping would be longer than
// MaxMappingLen. The servers then report the key as absent, and MPICH
// behaves as follows (pmi/WIRE.md §5): a PMI-1 client falls back to a
// hostname exchange (every rank puts hostname[<rank>], one extra barrier,
// then gets) and works; a PMI-2 client has no fallback, and MPI_Init fails
// with "PMI_process_mapping attribute not found" when there are two ranks
// or more.
func ProcessMapping(rankNode []int) string {
	nodes := renumber(rankNode)
	blocks := compress(nodes)
	for k := 1; k <= len(blocks); k++ {
		s := format(blocks[:k])
		if len(s) > MaxMappingLen {
			return ""
		}
		if expandsTo(blocks[:k], nodes) {
			return s
		}
	}
	return ""
}

// renumber maps daemon ids to node numbers 0, 1, … in order of first
// appearance.
func renumber(rankNode []int) []int {
	ids := map[int]int{}
	nodes := make([]int, len(rankNode))
	for r, d := range rankNode {
		n, ok := ids[d]
		if !ok {
			n = len(ids)
			ids[d] = n
		}
		nodes[r] = n
	}
	return nodes
}

// compress turns a rank→node list into triples: each run of equal nodes is
// one node with ppn = the run's length, and a run continuing on the next
// node number with the same length joins the triple before it.
func compress(nodes []int) []block {
	var blocks []block
	for r := 0; r < len(nodes); {
		n, run := nodes[r], 1
		for r+run < len(nodes) && nodes[r+run] == n {
			run++
		}
		r += run
		if k := len(blocks) - 1; k >= 0 && blocks[k].ppn == run && blocks[k].start+blocks[k].count == n {
			blocks[k].count++
			continue
		}
		blocks = append(blocks, block{start: n, count: 1, ppn: run})
	}
	return blocks
}

// expandsTo reports whether reading blocks the way MPICH does — block by
// block, node by node, ppn ranks each, starting over when the blocks run
// out — places every rank on the node nodes says.
func expandsTo(blocks []block, nodes []int) bool {
	r := 0
	for r < len(nodes) {
		for _, b := range blocks {
			for j := 0; j < b.count; j++ {
				for k := 0; k < b.ppn; k++ {
					if r == len(nodes) {
						return true
					}
					if nodes[r] != b.start+j {
						return false
					}
					r++
				}
			}
		}
	}
	return true
}

// format writes blocks in the client's syntax.
func format(blocks []block) string {
	var sb strings.Builder
	sb.WriteString("(vector")
	for _, b := range blocks {
		sb.WriteString(",(")
		sb.WriteString(strconv.Itoa(b.start))
		sb.WriteByte(',')
		sb.WriteString(strconv.Itoa(b.count))
		sb.WriteByte(',')
		sb.WriteString(strconv.Itoa(b.ppn))
		sb.WriteByte(')')
	}
	sb.WriteByte(')')
	return sb.String()
}
