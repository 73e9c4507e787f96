package hostrange

import "strings"

// Ranges writes names as List's string form ("node[2-8],login1"), which
// Slurm reads too (srun --nodelist), or joined by commas when that form
// cannot hold them.
func Ranges(names []string) string {
	if s, ok := compress(names); ok {
		return s
	}
	return strings.Join(names, ",")
}

// Names reads what Ranges wrote.
func Names(s string) ([]string, error) { return expandList(s) }
