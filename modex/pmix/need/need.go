// Package need decides, on the launch node, whether a job's programs may
// use PMIx, so that the daemons boot the PMIx server only for jobs that
// may (its boot costs more CPU than the rest of a host's launch). The
// answer errs one way only: when in doubt, the server boots. A program
// that uses PMIx all the same (it loaded Open MPI in a way this package
// cannot see) still fails loudly, never runs as N singletons: without a
// server, the daemons give the ranks a tripwire address instead.
//
// A program needs no server when its file, looked up as the daemons will,
// is a dynamically linked ELF executable whose library closure holds no
// MPI or PMIx library, that is not an interpreter or shell (which may load
// MPI or start an MPI program), that does not itself import dlopen, and
// whose arguments that name executables (numactl ./app, env ./app) need
// none either; a shell given a command string (sh -c STRING) needs none
// when every command of the string can be told and needs none (shell.go).
// Anything else boots it: not found, unreadable, a script file, not ELF,
// statically linked, a library that cannot be found.
package need

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"prsh/internal/loader"
)

// Program is one program of the job, as mpirun has it.
type Program struct {
	Argv []string
	Wdir string   // its working directory; "" = mpirun's
	Env  []string // the job's -x settings for it (PATH, LD_LIBRARY_PATH)
}

// Verdict says whether the job needs the server, and why, for the log.
type Verdict struct {
	Boot bool
	Why  string
}

// Decide is the verdict for the job's programs: the server boots if any
// of them may use it.
func Decide(progs []Program) Verdict {
	v := Verdict{Why: "no program may use PMIx"}
	for _, p := range progs {
		if len(p.Argv) == 0 {
			return Verdict{true, "a program without a command"}
		}
		c := newChecker(p)
		if why, boot := c.program(p.Argv, 0); boot {
			return Verdict{true, why}
		}
	}
	return v
}

// Limits on what a verdict reads: beyond them it is unsure, and boots.
const (
	maxDepth     = 3   // a wrapper's argument that is a wrapper…
	maxArgs      = 64  // arguments looked at as possible programs
	maxLibraries = 512 // libraries of a closure
)

// mpiLibraries are the sonames of libraries that are or may use a PMIx
// client: Open MPI's (and Intel MPI's: both are libmpi), PMIx itself, PRRTE
// and Open MPI's OpenSHMEM. MPICH's libmpich speaks PMI-1/2, which every
// daemon serves without the PMIx server.
var mpiLibraries = []string{"libmpi.", "libmpi_", "libmpi++", "libpmix", "libopen-rte", "libopen-pal", "libprrte", "liboshmem"}

// interpreters may load MPI themselves (mpi4py, Rmpi, MPI.jl, mpiJava) or
// start an MPI program; they are named by their file's base name, up to
// a version (python3.11, perl5.36).
var interpreters = []string{
	"python", "pypy", "perl", "ruby", "R", "Rscript", "julia", "java", "node", "nodejs", "lua", "luajit",
	"php", "tclsh", "wish", "octave", "matlab", "guile", "racket", "sbcl", "ocaml", "gdb", "valgrind",
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "csh", "tcsh", "fish", "busybox", "ash",
}

type checker struct {
	wdir    string
	path    string        // PATH the daemons look the program up in
	libs    loader.Search // LD_LIBRARY_PATH is mpirun's and the job's
	bashEnv bool          // BASH_ENV is set: bash -c reads a file first
}

func newChecker(p Program) *checker {
	libPath := filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))
	for _, kv := range p.Env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			libPath = append(libPath, filepath.SplitList(v)...)
		}
	}
	bashEnv := os.Getenv("BASH_ENV") != ""
	for _, kv := range p.Env {
		bashEnv = bashEnv || strings.HasPrefix(kv, "BASH_ENV=")
	}
	return &checker{wdir: p.Wdir, path: os.Getenv("PATH"), libs: loader.NewSearch(libPath), bashEnv: bashEnv}
}

// program is why argv's program may use PMIx, if it may.
func (c *checker) program(argv []string, depth int) (string, bool) {
	file, err := c.resolve(argv[0])
	if err != nil {
		return fmt.Sprintf("%s: %v", argv[0], err), true
	}
	if script, ok := c.shellString(file, argv); ok {
		return c.script(script, depth)
	}
	if why, boot := c.executable(file); boot {
		return file + ": " + why, true
	}
	return c.arguments(argv[1:], depth)
}

// arguments: a program run with another program's name as an argument
// (numactl, taskset, env, time, timeout, nice) runs that one too.
func (c *checker) arguments(args []string, depth int) (string, bool) {
	if len(args) > maxArgs {
		return "too many arguments to look at", true
	}
	for _, arg := range args {
		if _, err := c.resolve(arg); err != nil || arg == "" {
			continue // not a program
		}
		if depth+1 > maxDepth {
			return "programs nested too deep", true
		}
		if why, boot := c.program([]string{arg}, depth+1); boot {
			return why, true
		}
	}
	return "", false
}

// resolve finds argv[0] as the daemons will: relative to the working
// directory when it has a slash, else in PATH.
func (c *checker) resolve(name string) (string, error) {
	if strings.ContainsRune(name, '/') {
		if !filepath.IsAbs(name) && c.wdir != "" {
			name = filepath.Join(c.wdir, name)
		}
		return executableFile(name)
	}
	for _, dir := range filepath.SplitList(c.path) {
		if dir == "" {
			dir = "."
		}
		if f, err := executableFile(filepath.Join(dir, name)); err == nil {
			return f, nil
		}
	}
	return "", exec.ErrNotFound
}

func executableFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("not an executable file")
	}
	return path, nil
}

// executable is why the file may use PMIx, if it may.
func (c *checker) executable(file string) (string, bool) {
	if isInterpreter(file) {
		return "an interpreter, which may load MPI", true
	}
	f, err := elf.Open(file)
	if err != nil {
		return "not an ELF executable (a script?)", true
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "not an ELF executable", true
	}
	needed, err := f.ImportedLibraries()
	if err != nil || len(needed) == 0 {
		return "statically linked, or unreadable: it may hold MPI", true
	}
	if syms, err := f.ImportedSymbols(); err != nil || importsDlopen(syms) {
		return "it may load libraries at run time (dlopen)", true
	}
	return c.closure(file, f)
}

// isInterpreter looks at the file's name and at what it links to
// (python3 → python3.11).
func isInterpreter(file string) bool {
	names := []string{filepath.Base(file)}
	if real, err := filepath.EvalSymlinks(file); err == nil {
		names = append(names, filepath.Base(real))
	}
	for _, name := range names {
		base := strings.TrimRight(name, "0123456789.-")
		if slices.Contains(interpreters, base) {
			return true
		}
	}
	return false
}

func importsDlopen(syms []elf.ImportedSymbol) bool {
	for _, s := range syms {
		if s.Name == "dlopen" || s.Name == "dlmopen" {
			return true
		}
	}
	return false
}

// closure walks the libraries the file needs, breadth first, and says
// why one of them may use PMIx, if one may.
func (c *checker) closure(file string, f *elf.File) (string, bool) {
	seen := map[string]bool{}
	type object struct {
		path string
		f    *elf.File
	}
	queue := []object{{file, f}}
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		needed, err := obj.f.ImportedLibraries()
		if err != nil {
			return obj.path + " unreadable", true
		}
		for _, soname := range needed {
			if isMPI(soname) {
				return "links " + soname, true
			}
			if seen[soname] || slices.Contains(baseLibraries, soname) {
				continue
			}
			seen[soname] = true
			if len(seen) > maxLibraries {
				return "too many libraries to look at", true
			}
			path, lib, err := c.libs.Find(soname, obj.path, obj.f)
			if err != nil {
				return fmt.Sprintf("%s: %v", soname, err), true
			}
			defer lib.Close()
			queue = append(queue, object{path, lib})
		}
	}
	return "", false
}

// baseLibraries are the C and C++ runtimes' own libraries (glibc's and
// GCC's): they link nothing but each other and never MPI, so the closure
// does not open them. Nearly every program needs the C library, whose
// tables are the largest a verdict would read.
var baseLibraries = []string{
	"libc.so.6", "libm.so.6", "libmvec.so.1", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libresolv.so.2",
	"libutil.so.1", "libgcc_s.so.1", "libstdc++.so.6", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld-linux.so.2",
}

func isMPI(soname string) bool {
	base := filepath.Base(soname)
	for _, p := range mpiLibraries {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}
