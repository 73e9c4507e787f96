package job

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSlurmHosts(t *testing.T) {
	got, err := SlurmHosts("n[1-3],login", "2(x3),1")
	want := []Host{{"n1", 2, 0}, {"n2", 2, 0}, {"n3", 2, 0}, {"login", 1, 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("SlurmHosts = %v, %v; want %v", got, err, want)
	}
	got, err = SlurmHosts("n[01-02]", "")
	want = []Host{{"n01", 1, 0}, {"n02", 1, 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("SlurmHosts without tasks = %v, %v; want %v", got, err, want)
	}
	for _, tc := range []struct{ list, tasks, want string }{
		{"n[1-3]", "2(x2)", `gives 2 nodes, SLURM_JOB_NODELIST names 3`},
		{"n[1-2]", "2(x3)", `more entries than the 2 nodes`},
		{"n[1-2]", "2(3)", `"2(3)": want N or N(xM)`},
		{"n[1-2]", "x,1", `task count "x" is not`},
		{"n[1-", "1", `SLURM_JOB_NODELIST: "n[1-": '[' without ']'`},
	} {
		if _, err := SlurmHosts(tc.list, tc.tasks); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SlurmHosts(%q, %q) error %v, want %q", tc.list, tc.tasks, err, tc.want)
		}
	}
}

func TestLSFHosts(t *testing.T) {
	got, err := LSFHosts("a 4 b 2")
	want := []Host{{"a", 4, 0}, {"b", 2, 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LSFHosts = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"a 4 b", "a x", " "} {
		if _, err := LSFHosts(bad); err == nil {
			t.Errorf("LSFHosts(%q) succeeded", bad)
		}
	}
}

func TestDetectAllocation(t *testing.T) {
	nodefile := filepath.Join(t.TempDir(), "nodes")
	os.WriteFile(nodefile, []byte("a\na\nb\n"), 0o644)
	for _, tc := range []struct {
		env    map[string]string
		source string
		want   []Host
	}{
		{map[string]string{}, "", nil},
		{map[string]string{"SLURM_JOB_NODELIST": "a,b", "SLURM_TASKS_PER_NODE": "3,1", "PBS_NODEFILE": nodefile}, "Slurm",
			[]Host{{"a", 3, 0}, {"b", 1, 0}}},
		{map[string]string{"PBS_NODEFILE": nodefile}, "PBS", []Host{{"a", 2, 0}, {"b", 1, 0}}},
		{map[string]string{"LSB_DJOB_HOSTFILE": nodefile}, "LSF", []Host{{"a", 2, 0}, {"b", 1, 0}}},
		{map[string]string{"LSB_MCPU_HOSTS": "a 2"}, "LSF (LSB_MCPU_HOSTS)", []Host{{"a", 2, 0}}},
	} {
		a, err := DetectAllocation(func(k string) string { return tc.env[k] })
		switch {
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want == nil && a != nil:
			t.Errorf("%v: allocation %+v, want none", tc.env, a)
		case tc.want != nil && (a == nil || !strings.HasPrefix(a.Source, tc.source) || !reflect.DeepEqual(a.Hosts, tc.want)):
			t.Errorf("%v: allocation %+v, want %s %v", tc.env, a, tc.source, tc.want)
		}
	}
	_, err := DetectAllocation(func(k string) string { return map[string]string{"PBS_NODEFILE": "/no/such/file"}[k] })
	if err == nil || !strings.Contains(err.Error(), "batch allocation from PBS (PBS_NODEFILE=/no/such/file)") {
		t.Errorf("missing nodefile: %v", err)
	}
}
