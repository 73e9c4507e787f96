package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestStandsInForHydrasProxy: as hydra_pmi_proxy it runs the .real
// beside it with its arguments, through the gostart beside it if any.
func TestStandsInForHydrasProxy(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "gostart")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(exe, "echo", "plain").Output(); err != nil || string(out) != "plain\n" {
		t.Fatalf("gostart echo plain: %q, %v", out, err)
	}
	for _, twice := range []bool{false, true} {
		d := t.TempDir()
		copyTo(t, exe, filepath.Join(d, "hydra_pmi_proxy"))
		want := "--control-port x\n"
		if twice { // a gostart that says it ran
			if err := os.WriteFile(filepath.Join(d, "gostart"), []byte("#!/bin/sh\necho again\nexec \"$@\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			want = "again\n" + want
		}
		if err := os.Symlink("/bin/echo", filepath.Join(d, "hydra_pmi_proxy.real")); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(filepath.Join(d, "hydra_pmi_proxy"), "--control-port", "x").Output()
		if err != nil || string(out) != want {
			t.Fatalf("twice=%v: %q, %v; want %q", twice, out, err, want)
		}
	}
}

func copyTo(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}
