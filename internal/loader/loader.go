// Package loader finds a program's shared libraries as the launch node's
// dynamic loader would: DT_RPATH (when there is no DT_RUNPATH),
// LD_LIBRARY_PATH, DT_RUNPATH, the directories of /etc/ld.so.conf, then
// the default ones, $ORIGIN being the directory of the object asking.
// mpirun uses it to decide whether a job may use PMIx (modex/pmix/need)
// and to stage a program's libraries (stage).
package loader

import (
	"bufio"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Search is where libraries are looked for, besides the asking object's
// own DT_RPATH and DT_RUNPATH.
type Search struct {
	LibraryPath []string // LD_LIBRARY_PATH
	// system is ld.so.conf's directories, then the defaults, read at the
	// first search that gets that far: most programs need no library but
	// the C runtime's, which need.Decide does not look up.
	system func() []string
}

// NewSearch searches libraryPath (LD_LIBRARY_PATH's directories) and this
// machine's system directories.
func NewSearch(libraryPath []string) Search {
	return Search{LibraryPath: libraryPath, system: sync.OnceValue(func() []string {
		return append(confDirs("/etc/ld.so.conf", 0), "/lib64", "/usr/lib64", "/lib", "/usr/lib")
	})}
}

// ErrNotFound: no directory holds the library for the asking object's
// class and machine.
var ErrNotFound = errors.New("not found on the launch node")

// Find opens the library soname that from (opened as f) needs, taking
// only an ELF object of f's class and machine, as the loader does. The
// caller closes the library.
func (s Search) Find(soname, from string, f *elf.File) (string, *elf.File, error) {
	for _, dir := range s.dirs(soname, from, f) {
		path := filepath.Join(dir, soname)
		lib, err := elf.Open(path)
		if err != nil {
			continue
		}
		if lib.Class == f.Class && lib.Machine == f.Machine {
			return path, lib, nil
		}
		lib.Close()
	}
	return "", nil, ErrNotFound
}

// dirs are the directories searched for soname, in order; a name with a
// slash is a path of its own.
func (s Search) dirs(soname, from string, f *elf.File) []string {
	if strings.ContainsRune(soname, '/') {
		return []string{""}
	}
	origin := filepath.Dir(from)
	runpath := dynPaths(f, elf.DT_RUNPATH, origin)
	var dirs []string
	if len(runpath) == 0 {
		dirs = dynPaths(f, elf.DT_RPATH, origin)
	}
	dirs = append(dirs, s.LibraryPath...)
	dirs = append(dirs, runpath...)
	return append(dirs, s.system()...)
}

// dynPaths splits a DT_RPATH or DT_RUNPATH into directories, $ORIGIN
// expanded.
func dynPaths(f *elf.File, tag elf.DynTag, origin string) []string {
	vals, _ := f.DynString(tag)
	var dirs []string
	for _, v := range vals {
		for _, d := range filepath.SplitList(v) {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// confDirs reads the directories of an ld.so.conf file and those it
// includes (relative patterns are under the including file's directory).
func confDirs(file string, depth int) []string {
	f, err := os.Open(file)
	if err != nil || depth > 8 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "include "):
			pattern := strings.TrimSpace(strings.TrimPrefix(line, "include "))
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(file), pattern)
			}
			matches, _ := filepath.Glob(pattern)
			for _, m := range matches {
				dirs = append(dirs, confDirs(m, depth+1)...)
			}
		default:
			dirs = append(dirs, line)
		}
	}
	return dirs
}
