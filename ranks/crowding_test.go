package ranks

import (
	"slices"
	"testing"
)

func TestCrowdingEnv(t *testing.T) {
	three := Request{Ranks: make([]Rank, 3)}
	for _, c := range []struct {
		name string
		req  Request
		env  []string
		cpus int
		want []string
	}{
		{"more ranks than CPUs", three, []string{"PATH=/bin"}, 2, []string{"OMPI_MCA_mpi_oversubscribe=1"}},
		{"as many", three, nil, 3, nil},
		{"fewer", three, nil, 64, nil},
		{"CPUs unknown", three, nil, 0, nil},
		{"the job's own word wins", three, []string{"OMPI_MCA_mpi_oversubscribe=0"}, 2, nil},
		{"a longer name is not it", three, []string{"OMPI_MCA_mpi_oversubscribe_x=0"}, 2, []string{"OMPI_MCA_mpi_oversubscribe=1"}},
	} {
		if got := c.req.crowdingEnv(c.env, c.cpus); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
