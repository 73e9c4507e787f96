package need

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// system skips the test unless the system has every program named.
func system(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s not installed", n)
		}
	}
}

func decide(wdir string, argv ...string) Verdict {
	return Decide([]Program{{Argv: argv, Wdir: wdir}})
}

func TestNoServerForPlainPrograms(t *testing.T) {
	system(t, "true", "hostname", "env", "sleep")
	for _, argv := range [][]string{{"true"}, {"/bin/true"}, {"hostname"}, {"env", "FOO=1", "true"}, {"sleep", "1"}} {
		if v := decide("", argv...); v.Boot {
			t.Errorf("%q boots the PMIx server: %s", argv, v.Why)
		}
	}
}

func TestServerWhenUnsure(t *testing.T) {
	system(t, "sh", "true")
	dir := t.TempDir()
	script := filepath.Join(dir, "run")
	if err := os.WriteFile(script, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	os.WriteFile(data, []byte("x"), 0o644)
	cases := [][]string{
		{"sh", "-c", "$PROG"},        // a shell running what cannot be told
		{"sh", "-l", "-c", "true"},   // a login shell, which reads the profile
		{"./run"},                    // a script, relative to the working directory
		{"no-such-program-here"},     // not found on the launch node
		{"env", "./run"},             // a wrapper of a script
		{"true", "./run"},            // any program naming another
		{filepath.Join(dir, "data")}, // not executable
	}
	for _, argv := range cases {
		if v := decide(dir, argv...); !v.Boot {
			t.Errorf("%q runs without the PMIx server", argv)
		}
	}
}

func TestServerForInterpreters(t *testing.T) {
	system(t, "python3")
	if v := decide("", "python3", "-c", "from mpi4py import MPI"); !v.Boot {
		t.Errorf("python3 runs without the PMIx server")
	}
}

func TestServerForOpenMPI(t *testing.T) {
	system(t, "ompi_info", "env")
	for _, argv := range [][]string{{"ompi_info"}, {"env", "ompi_info"}} {
		v := decide("", argv...)
		if !v.Boot {
			t.Errorf("%q runs without the PMIx server", argv)
		}
		t.Logf("%q: %s", argv, v.Why)
	}
}

func TestMPMDBootsIfAnyNeeds(t *testing.T) {
	system(t, "true", "sh")
	v := Decide([]Program{{Argv: []string{"true"}}, {Argv: []string{"sh", "-c", "$PROG"}}})
	if !v.Boot {
		t.Error("an MPMD job with a shell running what cannot be told runs without the PMIx server")
	}
}

func TestLibraryNotFoundBoots(t *testing.T) {
	system(t, "cc")
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	os.WriteFile(src, []byte("int f(void) { return 1; }\n"), 0o644)
	lib := filepath.Join(dir, "libprshneed.so")
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Skipf("cc: %v %s", err, out)
	}
	main := filepath.Join(dir, "main.c")
	os.WriteFile(main, []byte("int f(void); int main(void) { return f() - 1; }\n"), 0o644)
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("cc", "-o", prog, main, "-L"+dir, "-lprshneed").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v %s", err, out)
	}
	if v := decide(dir, prog); !v.Boot {
		t.Error("a program whose library is not found runs without the PMIx server")
	}
	// With the library found through the job's LD_LIBRARY_PATH, it needs none.
	if v := Decide([]Program{{Argv: []string{prog}, Env: []string{"LD_LIBRARY_PATH=" + dir}}}); v.Boot {
		t.Errorf("a program with a plain library boots the PMIx server: %s", v.Why)
	}
}

// TestShellCommandStrings: sh -c STRING needs the server only if a
// command of STRING may, when each can be told; anything that runs what
// cannot be told boots it.
func TestShellCommandStrings(t *testing.T) {
	system(t, "sh", "bash", "true", "sleep", "touch", "hostname", "env")
	plain := []string{
		"true",
		`sleep 1; echo "rank $PRSH_RANK" >&2`,
		`while [ ! -e "$M/$R" ]; do sleep 0.05; done; touch "$MARKS/$R"; exec sleep 300`,
		"X=1 hostname 2>/dev/null # ompi_info",
		"if true; then env FOO=1 true; fi && for f in a b; do echo $f; done",
	}
	for _, s := range plain {
		for _, shell := range []string{"sh", "bash"} {
			if v := decide("", shell, "-c", s); v.Boot {
				t.Errorf("%s -c %q boots the PMIx server: %s", shell, s, v.Why)
			}
		}
	}
	unsure := []string{
		"$PROG", `exec "$@"`, "env $X", "echo $(hostname)", "echo `hostname`", "cat <<EOF\nx\nEOF",
		"f() { true; }; f", "eval true", ". ./x", `trap "true" EXIT`, "echo 'unterminated",
		"case $x in a) true;; esac", "no-such-program-here", "setsid sh -c 'true'",
	}
	for _, s := range unsure {
		if v := decide("", "sh", "-c", s); !v.Boot {
			t.Errorf("sh -c %q runs without the PMIx server", s)
		}
	}
	if v := Decide([]Program{{Argv: []string{"bash", "-c", "true"}, Env: []string{"BASH_ENV=/x"}}}); !v.Boot {
		t.Errorf("bash -c with BASH_ENV runs without the PMIx server")
	}
}

// TestShellRunningOpenMPI: sh -c naming an Open MPI program, or a wrapper
// of one, boots the server.
func TestShellRunningOpenMPI(t *testing.T) {
	system(t, "sh", "ompi_info", "nohup")
	for _, s := range []string{"ompi_info", "sleep 1; exec ompi_info --all >/dev/null", "nohup ompi_info &"} {
		if v := decide("", "sh", "-c", s); !v.Boot {
			t.Errorf("sh -c %q runs without the PMIx server", s)
		}
	}
}
