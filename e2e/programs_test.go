package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"prsh/modex/pmix"
)

// errMissing says a compiler or library the C test programs need is not
// installed.
var errMissing = errors.New("not installed")

// testProgram returns the path of program name from a set compiled by
// programs: skipped (saying why) when what it needs is missing, failed
// when it does not compile.
func testProgram(t testing.TB, programs func() (string, error), why, name string) string {
	t.Helper()
	dir, err := programs()
	if err == errMissing {
		t.Skip(why)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// compileC builds each C source matching pattern into dir with cc: pre,
// then -o and the source, then post (the libraries).
func compileC(dir, pattern, cc string, pre, post []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sources, _ := filepath.Glob(pattern)
	for _, src := range sources {
		out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
		args := append(append(slices.Clone(pre), "-o", out, src), post...)
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", src, err, b)
		}
	}
	return nil
}

// mpichPrograms compiles the MPI programs of testdata/mpi with MPICH's
// compiler, once. mpicc.mpich by name: with Open MPI installed too, mpicc
// is Open MPI's.
var mpichPrograms = sync.OnceValues(func() (string, error) {
	cc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		return "", errMissing
	}
	dir := filepath.Join(bin, "mpich")
	return dir, compileC(dir, "testdata/mpi/*.c", cc, []string{"-O2"}, nil)
})

// mpich returns the path of a compiled MPICH test program. Without MPICH
// (.ci/run installs it) the test is skipped; a program that does not
// compile fails it.
func mpich(t *testing.T, name string) string {
	t.Helper()
	return testProgram(t, mpichPrograms, "MPICH is not installed (apt-get install mpich libmpich-dev)", name)
}

// openMPIPrograms compiles the MPI programs of testdata/mpi with Open
// MPI's compiler, and the PMIx programs of testdata/pmix against the PMIx
// client library, once.
var openMPIPrograms = sync.OnceValues(func() (string, error) {
	cc, err := exec.LookPath("mpicc.openmpi")
	if err != nil {
		return "", errMissing
	}
	dir := filepath.Join(bin, "openmpi")
	if err := compileC(dir, "testdata/mpi/*.c", cc, []string{"-O2"}, nil); err != nil {
		return "", err
	}
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "pmix").Output()
	if err != nil {
		return "", errMissing
	}
	f := strings.Fields(string(flags))
	return dir, compileC(dir, "testdata/pmix/*.c", "cc", append([]string{"-O2", "-Wall"}, f...), f)
})

// openMPI returns the path of a compiled Open MPI (or PMIx) test program,
// skipping the test when Open MPI or PMIx is not installed (.ci/run
// installs them) or the testbed cannot give each node its own hostname:
// Open MPI names its shared-memory segments after the host, so emulated
// nodes that share one would share segments too.
func openMPI(t *testing.T, name string) string {
	t.Helper()
	if !pmix.Available {
		t.Skip("built without PMIx (TestOpenMPIWithoutPMIx covers this build)")
	}
	if os.Geteuid() != 0 {
		t.Skip("Open MPI on the testbed needs a hostname per node (UTS namespaces: root)")
	}
	return testProgram(t, openMPIPrograms, "Open MPI or PMIx is not installed (apt-get install openmpi-bin libopenmpi-dev libpmix-dev)", name)
}
