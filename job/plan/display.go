package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"prsh/job"
)

// displayMap prints which ranks each node runs, and the program of each
// when the job has several (--display-map); then the hosts of the list
// that get no rank, so no daemon (spare).
func displayMap(w io.Writer, m *job.Map, spare []job.Host, progs []program) {
	fmt.Fprintf(w, "mpirun: map: %s on %s\n", count(m.Size(), "rank"), count(len(m.Nodes), "node"))
	programs := programOfRanks(progs, m.Size())
	byNode := make([][]int, len(m.Nodes))
	for r, node := range m.RankNode {
		byNode[node] = append(byNode[node], r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, h := range m.Nodes {
		fmt.Fprintf(tw, "    %s\tranks %s%s\n", h.Name, rankRanges(byNode[i]), programsOf(byNode[i], programs))
	}
	for _, h := range spare {
		fmt.Fprintf(tw, "    %s\tno rank: no orted (--every-host starts one)\n", h.Name)
	}
	tw.Flush()
}

// programOfRanks numbers each rank's program (0 = the first).
func programOfRanks(progs []program, size int) []int {
	program := make([]int, size)
	first := 0
	for i, prog := range progs {
		for r := first; r < first+prog.np && r < size; r++ {
			program[r] = i
		}
		first += prog.np
	}
	return program
}

// programsOf names the programs of ranks, when the job has several.
func programsOf(ranks []int, program []int) string {
	var names []string
	seen := map[int]bool{}
	for _, r := range ranks {
		if p := program[r]; !seen[p] {
			seen[p] = true
			names = append(names, "program "+strconv.Itoa(p+1))
		}
	}
	if len(seen) == 0 || (len(seen) == 1 && program[len(program)-1] == 0) {
		return "" // no rank, or one program in the whole job
	}
	return "\t" + strings.Join(names, ", ")
}

// rankRanges writes ascending ranks compactly: 0-3,8,10-11.
func rankRanges(ranks []int) string {
	if len(ranks) == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ranks[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// count says "1 rank" or "n ranks".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
