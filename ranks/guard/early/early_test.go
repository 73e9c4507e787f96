package early

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/internal/timeouts"
	"prsh/job"
	"prsh/job/compat"
)

func TestLocalJob(t *testing.T) {
	self := func() string { return "node7.cluster" }
	none := func(string) string { return "" }
	hostfile := func(k string) string {
		if k == "MPIRUN_HOSTFILE" {
			return "/tmp/hosts"
		}
		return ""
	}
	cases := []struct {
		args   string
		getenv func(string) string
		want   bool
	}{
		{"mpirun -np 64 ./app", none, true},
		{"mpirun ./app -H far", none, true},               // the program's arguments
		{"mpirun -np 4 --tag-output ./app", none, true},   // ./app read as the value of --tag-output
		{"mpirun --tag-output ./app -H far", none, false}, // and then its arguments as mpirun's
		{"mpirun -H localhost:4 -np 4 ./app", none, true},
		{"mpirun --host=localhost,127.0.0.1:2 ./app", none, true},
		{"mpirun -H node7 -np 2 ./app", none, true},
		{"mpirun -H node7.cluster:2 ./app", none, true},
		{"mpirun -H node8 -np 2 ./app", none, false},
		{"mpirun -H localhost,node8 ./app", none, false},
		{"mpirun -H node[1-2] ./app", none, false},
		{"mpirun -np 2 -H", none, false},
		{"mpirun -np 2 ./app", hostfile, false},
		{"mpirun -H localhost:2 -np 2 ./app", hostfile, true}, // -H wins over the variable
		{"mpirun --hostfile h -np 2 ./app", none, false},
		{"mpirun -machinefile h ./app", none, false},
		{"mpirun --dvm uri -np 2 ./app", none, false},
		{"mpirun --dvm=uri ./app", none, false},
		{"mpirun --dvm-start", none, false},
		{"mpirun --version", none, false},
		{"mpirun -h", none, false},
		{"mpirun --mca orte_default_hostfile h ./app", none, false},
		{"mpirun --mca btl self ./app", none, true},
		{"mpirun -H localhost --launch-agent ssh ./app", none, false},
		{"mpirun --mca plm_rsh_agent ssh -H localhost ./app", none, false},
		{"mpirun -np 1 ./a : -np 1 -H far ./b", none, false},
		{"mpirun -np 1 ./a : -np 1 ./b", none, true},
		{"mpirun -x A=1 -np 2 -- ./app -H far", none, true},
	}
	for _, c := range cases {
		if got := localJob(strings.Fields(c.args), c.getenv, self); got != c.want {
			t.Errorf("localJob(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestHostVarsWhole: every variable through which the plan may find
// hosts without -H is one that localJob reads.
func TestHostVarsWhole(t *testing.T) {
	var asked []string
	ask := func(k string) string { asked = append(asked, k); return "" }
	job.DetectAllocation(ask)
	compat.DefaultHostfile(ask)
	asked = append(asked, compat.HostfileVars...)
	for _, k := range asked {
		if !slices.Contains(HostVars, k) {
			t.Errorf("the plan reads hosts from %s, which HostVars lacks", k)
		}
		if localJob([]string{"mpirun", "./app"}, func(v string) string {
			if v == k {
				return "x"
			}
			return ""
		}, nodename) {
			t.Errorf("with %s set, localJob says the job is local", k)
		}
	}
}

func TestDefaultStopped(t *testing.T) {
	if want := timeouts.Default().GuardStoppedMS; DefaultStoppedMS != want {
		t.Errorf("DefaultStoppedMS = %d, timeouts.Default's GuardStoppedMS %d", DefaultStoppedMS, want)
	}
}

// fakeGuard is a stand-in for the guard's binary that waits to be
// killed, and whose start is seen in a file.
func fakeGuard(t *testing.T) (path, seen string) {
	dir := t.TempDir()
	path, seen = filepath.Join(dir, "guard"), filepath.Join(dir, "seen")
	script := "#!/bin/sh\necho \"$@\" > " + seen + "\nexec sleep 1000\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, seen
}

// gone says whether pid was killed and reaped: a zombie would still
// take signals.
func gone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

func TestSpawnTakeDrop(t *testing.T) {
	path, seen := fakeGuard(t)
	p := spawn(t, path)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(seen)
		if string(b) == Arg+" 1234\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guard's argv: %q, want %q", b, Arg+" 1234\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pgid, _ := syscall.Getpgid(p.Pid); pgid != p.Pid {
		t.Errorf("the guard's process group is %d, want its own (%d)", pgid, p.Pid)
	}

	keep(p)
	if q := Take(999); q != nil || !gone(p.Pid) {
		t.Errorf("Take with another bound: %+v, and the guard killed and reaped: %v", q, gone(p.Pid))
	}

	p = keep(spawn(t, path))
	if q := Take(1234); q != p {
		t.Errorf("Take with its bound: %+v, want %+v", q, p)
	}
	if Take(1234) != nil {
		t.Error("a guard taken twice")
	}
	p.Discard()

	p = keep(spawn(t, path))
	Drop()
	if !gone(p.Pid) || Take(1234) != nil {
		t.Error("Drop left the guard running or to be taken")
	}
	Drop() // nothing left: nothing to do
}

func spawn(t *testing.T, path string) *Process {
	p, err := Spawn(path, 1234)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// keep holds p as the guard started at init.
func keep(p *Process) *Process {
	mu.Lock()
	started = p
	mu.Unlock()
	return p
}

// TestImportsKeepInitEarly: the package imports only what Go initializes
// before time and os, so that mpirun's guard starts at the beginning of
// its inits (text.go says why).
func TestImportsKeepInitEarly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p != "sync" && p != "syscall" {
				t.Errorf("%s imports %s: only sync and syscall keep the guard's start first", f, p)
			}
		}
	}
}
