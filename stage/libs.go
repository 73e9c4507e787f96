package stage

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"prsh/internal/loader"
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
// found as the launch node's loader finds them (internal/loader), with
// glibc's libraries left out (see glibc). A library the launch node
// cannot find is an error: the program would not start there either.
func Libraries(exes []string) ([]Lib, error) {
	search := loader.NewSearch(filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")))
	var out []Lib
	seen := map[string]bool{}
	queue := append([]string(nil), exes...)
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		libs, err := needed(obj, search, seen)
		if err != nil {
			return nil, err
		}
		for _, lib := range libs {
			out = append(out, lib)
			queue = append(queue, lib.Path)
		}
	}
	return out, nil
}

// needed finds the libraries obj needs that are not yet seen, nor glibc's.
func needed(obj string, search loader.Search, seen map[string]bool) ([]Lib, error) {
	f, err := elf.Open(obj)
	var notELF *elf.FormatError
	if errors.As(err, &notELF) {
		return nil, nil // a script: its interpreter's libraries are the node's
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", obj, err)
	}
	defer f.Close()
	names, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", obj, err)
	}
	var libs []Lib
	for _, name := range names {
		if seen[name] || isGlibc(name) {
			continue
		}
		seen[name] = true
		path, lib, err := search.Find(name, obj, f)
		if err != nil {
			return nil, fmt.Errorf("%s (needed by %s) not found on the launch node", name, obj)
		}
		lib.Close()
		libs = append(libs, Lib{Name: name, Path: path})
	}
	return libs, nil
}
