package mpirun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"prsh/daemon/dvm"
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

// TestDVMJobPMIx: the client decides whether its job gets a PMIx
// namespace in the DVM as a plain mpirun decides whether to boot the
// server: --pmix auto looks at the programs, on and off decide alone.
func TestDVMJobPMIx(t *testing.T) {
	script := filepath.Join(t.TempDir(), "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nexec ./a.out\n"), 0o755)
	hello := dvm.Hello{Hosts: []string{"node001", "node002"}, HostArgs: []string{"node001,node002"}}
	for _, tc := range []struct {
		line   string
		noPMIx bool
	}{
		{"mpirun -np 2 /bin/true", true},
		{"mpirun -np 2 --pmix on /bin/true", false},
		{"mpirun -np 2 SCRIPT", false},
		{"mpirun -np 2 --pmix off SCRIPT", true},
		{"mpirun -np 1 /bin/true : -np 1 SCRIPT", false},
	} {
		line := strings.ReplaceAll(tc.line, "SCRIPT", script)
		job, err := dvmJobOf(t, line, hello)
		if err != nil || job.Submit.App.NoPMIx != tc.noPMIx {
			t.Errorf("%s: no PMIx %v, %v; want %v", line, job.Submit.App.NoPMIx, err, tc.noPMIx)
		}
	}
	_, err := dvmJobOf(t, "mpirun --pmix maybe /bin/true", hello)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), `--pmix must be auto, on or off, not "maybe"`) {
		t.Errorf("--pmix maybe: %v", err)
	}
}

// dvmJobOf is the job a client of line would submit to a DVM that says
// hello.
func dvmJobOf(t *testing.T, line string, hello dvm.Hello) (dvm.Job, error) {
	t.Helper()
	var job dvm.Job
	var jobErr error
	app := &cli.App{
		Name: "mpirun", Flags: flags(), DisableSliceFlagSeparator: true,
		Action: func(c *cli.Context) error {
			_, job, jobErr = dvmJob(c, dvmRequest(c, hello), hello, c.String("pmix"))
			return nil
		},
	}
	if err := app.Run(joinPairs(strings.Fields(line), app.Flags)); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return job, jobErr
}
