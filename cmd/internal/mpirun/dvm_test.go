package mpirun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDVMNamed: --dvm takes the next word only when it is a URI or a
// file that holds one (else the job's command follows, and PRSH_DVM
// names the DVM); --dvm-stop takes any word that is no option; prun and
// pterm put their flag first.
func TestDVMNamed(t *testing.T) {
	dir := t.TempDir()
	uriFile, program := filepath.Join(dir, "dvm.uri"), filepath.Join(dir, "a.out")
	os.WriteFile(uriFile, []byte("unix:/run/x/dvm.sock\n"), 0o600)
	os.WriteFile(program, []byte("\x7fELF…"), 0o755)
	for _, tc := range []struct {
		command, in, want string
	}{
		{Mpirun, "mpirun --dvm -np 2 A", "mpirun --dvm= -np 2 A"},
		{Mpirun, "mpirun --dvm unix:/x/dvm.sock A", "mpirun --dvm unix:/x/dvm.sock A"},
		{Mpirun, "mpirun --dvm URI -genv A b A", "mpirun --dvm URI -genv=A=b A"},
		{Mpirun, "mpirun --dvm PROGRAM", "mpirun --dvm= PROGRAM"},
		{Mpirun, "mpirun --dvm=URI A", "mpirun --dvm=URI A"},
		{Mpirun, "mpirun --dvm-stop", "mpirun --dvm-stop="},
		{Mpirun, "mpirun --dvm-stop gone.uri", "mpirun --dvm-stop gone.uri"},
		{Prun, "prun -np 2 A --dvm", "prun --dvm= -np 2 A --dvm"},
		{Prun, "prun --dvm URI A", "prun --dvm= --dvm URI A"},
		{Pterm, "pterm", "pterm --dvm-stop="},
		{Pterm, "pterm URI", "pterm --dvm-stop URI"},
		{Prte, "prte -H a,b", "prte --dvm-start -H a,b"},
	} {
		in := strings.NewReplacer("URI", uriFile, "PROGRAM", program).Replace(tc.in)
		want := strings.NewReplacer("URI", uriFile, "PROGRAM", program).Replace(tc.want)
		got := strings.Join(joinPairs(withCommandFlag(strings.Fields(in), tc.command), flags()), " ")
		if got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestWithoutDaemonize: the background DVM's command line is the
// foreground one's without --daemonize, however it was spelled.
func TestWithoutDaemonize(t *testing.T) {
	in := []string{"--daemonize", "-H", "a", "-daemonize", "--daemonize=true", "--dvm-uri", "f"}
	if got := strings.Join(withoutDaemonize(in), " "); got != "-H a --dvm-uri f" {
		t.Errorf("withoutDaemonize: %s", got)
	}
}
