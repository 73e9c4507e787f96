package stage

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Lib is a shared library as the program asks for it (its DT_NEEDED
// name) and where the launch node's loader would find it.
type Lib struct{ Name, Path string }

// glibc's own libraries are never staged: the kernel starts each rank
// with the node's loader (PT_INTERP), which only works with the node's
// own C library, so those must come from the node.
var glibc = []string{
	"ld-linux", "ld64.so", "libc.so", "libm.so", "libmvec.so", "libpthread.so", "libdl.so",
	"librt.so", "libresolv.so", "libutil.so", "libanl.so", "libnsl.so", "libnss_",
	"libthread_db.so", "libBrokenLocale.so", "libc_malloc_debug.so",
}

func isGlibc(name string) bool {
	for _, p := range glibc {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Libraries is the closure of the shared libraries the programs load,
// found as the launch node's loader finds them: DT_RPATH (when there is
// no DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, the directories of
// /etc/ld.so.conf, then the default ones; $ORIGIN is the directory of the
// object asking. glibc's libraries are left out (see glibc). A library
// the launch node cannot find is an error: the program would not start
// there either.
func Libraries(exes []string) ([]Lib, error) {
	system := append(confDirs("/etc/ld.so.conf", 0), "/lib64", "/usr/lib64", "/lib", "/usr/lib")
	env := filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))
	var out []Lib
	seen := map[string]bool{}
	queue := append([]string(nil), exes...)
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		needed, dirs, err := dependencies(obj, env, system)
		if err != nil {
			return nil, err
		}
		for _, name := range needed {
			if seen[name] || isGlibc(name) {
				continue
			}
			seen[name] = true
			path, ok := find(name, dirs, obj)
			if !ok {
				return nil, fmt.Errorf("%s (needed by %s) not found on the launch node", name, obj)
			}
			out = append(out, Lib{Name: name, Path: path})
			queue = append(queue, path)
		}
	}
	return out, nil
}

// dependencies lists what obj needs and the directories its loader
// searches for them, in order.
func dependencies(obj string, env, system []string) ([]string, []string, error) {
	f, err := elf.Open(obj)
	var notELF *elf.FormatError
	if errors.As(err, &notELF) {
		return nil, nil, nil // a script: its interpreter's libraries are the node's
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", obj, err)
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", obj, err)
	}
	origin := filepath.Dir(obj)
	rpath := dynPaths(f, elf.DT_RPATH, origin)
	runpath := dynPaths(f, elf.DT_RUNPATH, origin)
	var dirs []string
	if len(runpath) == 0 {
		dirs = append(dirs, rpath...)
	}
	dirs = append(append(append(dirs, env...), runpath...), system...)
	return needed, dirs, nil
}

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

// find looks for name in dirs, taking only an ELF object of the asking
// object's class and machine, as the loader does.
func find(name string, dirs []string, asking string) (string, bool) {
	want, err := elf.Open(asking)
	if err != nil {
		return "", false
	}
	defer want.Close()
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if f, err := elf.Open(p); err == nil {
			ok := f.Class == want.Class && f.Machine == want.Machine
			f.Close()
			if ok {
				return p, true
			}
		}
	}
	return "", false
}

// confDirs reads the directories of an ld.so.conf file and those it
// includes.
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
