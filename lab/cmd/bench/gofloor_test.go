package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGoFloorLayout: each floor's directory holds a copy of mpiexec.hydra
// (Hydra looks for its proxy beside it), gostart as hydra_pmi_proxy, the
// real proxy as hydra_pmi_proxy.real, and a second gostart for two starts.
func TestGoFloorLayout(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"mpiexec.hydra", "hydra_pmi_proxy", "gostart"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n# "+name+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	dir := t.TempDir()
	gostart := filepath.Join(bin, "gostart")
	floors, err := goFloorLaunchers(dir, gostart)
	if err != nil {
		t.Fatal(err)
	}
	if len(floors) != 2 {
		t.Fatalf("%d floors, want 2", len(floors))
	}
	for i, f := range floors {
		d := filepath.Join(dir, []string{"go-floor-1", "go-floor-2"}[i])
		if want := []string{gostart, filepath.Join(d, "mpiexec.hydra"), "-n", "4"}; !slices.Equal(f.command("-n", "4"), want) {
			t.Errorf("%s: %q, want %q", f.name, f.command("-n", "4"), want)
		}
		same(t, filepath.Join(d, "mpiexec.hydra"), "mpiexec.hydra")
		same(t, filepath.Join(d, "hydra_pmi_proxy"), "gostart")
		if real, err := os.Readlink(filepath.Join(d, "hydra_pmi_proxy.real")); err != nil || real != filepath.Join(bin, "hydra_pmi_proxy") {
			t.Errorf("%s: hydra_pmi_proxy.real -> %q, %v", f.name, real, err)
		}
		if _, err := os.Stat(filepath.Join(d, "gostart")); (err == nil) != (i == 1) {
			t.Errorf("%s: a gostart of its own: %v", f.name, err == nil)
		}
	}
}

// same fails unless path is an executable copy of the stub name.
func same(t *testing.T, path, name string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "#!/bin/sh\n# "+name+"\n" {
		t.Errorf("%s: %q, %v; want a copy of %s", path, b, err, name)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable", path)
	}
}
