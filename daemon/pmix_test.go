package daemon

import (
	"slices"
	"testing"

	"prsh/daemon/protocol"
)

// TestHashStoreForAsyncModex: the job keeps its PMIx data in the hash
// store exactly when some program of it turns Open MPI's asynchronous
// modex on, by the last setting that program sees.
func TestHashStoreForAsyncModex(t *testing.T) {
	const on, off = "OMPI_MCA_pmix_base_async_modex=1", "OMPI_MCA_pmix_base_async_modex=0"
	hash := []string{"PMIX_GDS_MODULE=hash"}
	for _, c := range []struct {
		name string
		base []string
		app  protocol.Launch
		want []string
	}{
		{"unset", []string{"HOME=/root"}, protocol.Launch{}, nil},
		{"-x", nil, protocol.Launch{Env: []string{on}}, hash},
		{"orted's environment", []string{on}, protocol.Launch{}, hash},
		{"-x undoes the environment", []string{on}, protocol.Launch{Env: []string{off}}, nil},
		{"last -x wins", nil, protocol.Launch{Env: []string{on, off}}, nil},
		{"words", nil, protocol.Launch{Env: []string{"OMPI_MCA_pmix_base_async_modex=True"}}, hash},
		{"false word", nil, protocol.Launch{Env: []string{"OMPI_MCA_pmix_base_async_modex=no"}}, nil},
		{"another parameter", nil, protocol.Launch{Env: []string{"OMPI_MCA_pmix_base_async_modex_x=1"}}, nil},
		{"second MPMD program", nil, protocol.Launch{More: []protocol.App{{First: 1, Env: []string{on}}}}, hash},
	} {
		if got := hashStoreEnv(c.base, c.app); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
