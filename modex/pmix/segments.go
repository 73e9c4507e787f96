package pmix

import (
	"fmt"
	"strconv"
	"strings"
)

// Segments are the sizes in bytes of the segments of the library's
// shared-memory store (ds21), where a node's server keeps each job's
// data for its ranks to read: an index (meta) and the values (data),
// each chained to another of its size when full. The server fills each
// segment it makes, so their size is most of its memory; a value larger
// than a data segment cannot be stored (the library aborts the server
// with a line that names NS_DATA_SEG_SIZE). PMIx's own sizes are 4 MiB
// each, half of an orted-pmix's memory; Open MPI's and MPICH's values
// (addresses, the job's maps as PMIx's regular expressions) are a few
// KiB. A job that puts larger values sets the sizes (SegmentsOf).
type Segments struct{ Meta, Data int64 }

// DefaultSegments are the sizes unless the job sets them.
var DefaultSegments = Segments{Meta: 256 << 10, Data: 1 << 20}

// The library's parameters: read from the environment by the server
// and by each client, which must agree.
const (
	envMetaSegment = "NS_META_SEG_SIZE"
	envDataSegment = "NS_DATA_SEG_SIZE"
)

// env is what the server and its clients are given.
func (s Segments) env() []string {
	return []string{envMetaSegment + "=" + strconv.FormatInt(s.Meta, 10), envDataSegment + "=" + strconv.FormatInt(s.Data, 10)}
}

// Bytes is what a job's store takes of the server's directory at
// first: one segment of each, and four pages of locks and index
// (measured: PMIx 4.2, with 1 and 12 local ranks).
func (s Segments) Bytes() int64 { return s.Meta + s.Data + 16<<10 }

// minSegment is the least size the library takes (a page).
const minSegment = 4 << 10

// SegmentsOf reads the sizes from a job's environment (VAR=value
// entries, the last of a name winning) and sets the rest to the default.
func SegmentsOf(env []string) (Segments, error) {
	s := DefaultSegments
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		var field *int64
		switch name {
		case envMetaSegment:
			field = &s.Meta
		case envDataSegment:
			field = &s.Data
		default:
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < minSegment {
			return Segments{}, fmt.Errorf("%s=%s: want a size in bytes, at least %d", name, value, minSegment)
		}
		*field = n
	}
	return s, nil
}
