package stage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"

	"prsh/daemon/protocol"
)

// PlanError is a file that cannot be staged, found on the launch node
// before anything starts; Status is a shell's (127 not found, 126 not
// executable).
type PlanError struct {
	error
	Status int
}

// Program is one program of the job as the user wrote it, and the
// directory a relative name is taken from.
type Program struct {
	Arg  string
	Wdir string
}

// Plan lists what to stage for the programs: each distinct program, and
// with libs the shared libraries they load from the launch node (see
// Libraries). Node names the launch node in errors.
func Plan(node string, progs []Program, libs bool) ([]protocol.StagedFile, error) {
	var files []protocol.StagedFile
	seen := map[string]bool{}
	var exes []string
	for _, p := range progs {
		if seen[p.Arg] {
			continue
		}
		seen[p.Arg] = true
		src, info, err := resolve(p)
		if err != nil {
			pe := err.(PlanError)
			pe.error = fmt.Errorf("%s: %w", node, pe.error)
			return nil, pe
		}
		name := path.Join(strconv.Itoa(len(exes)), filepath.Base(src))
		files = append(files, staged(src, name, info))
		files[len(files)-1].Arg = p.Arg
		exes = append(exes, src)
	}
	if !libs {
		return files, nil
	}
	found, err := Libraries(exes)
	if err != nil {
		return nil, PlanError{fmt.Errorf("%s: --preload-libs: %w", node, err), 127}
	}
	for _, lib := range found {
		info, err := os.Stat(lib.Path)
		if err != nil {
			return nil, PlanError{fmt.Errorf("%s: --preload-libs: %w", node, err), 127}
		}
		files = append(files, staged(lib.Path, path.Join(LibDir, lib.Name), info))
	}
	return files, nil
}

func staged(src, name string, info fs.FileInfo) protocol.StagedFile {
	return protocol.StagedFile{Source: src, Name: name, Size: info.Size(), Mode: uint32(info.Mode().Perm())}
}

// resolve finds the program on the launch node as a rank would: a name
// with a slash from the working directory, a bare name in the PATH.
func resolve(p Program) (string, fs.FileInfo, error) {
	src := p.Arg
	if filepath.Base(src) == src {
		found, err := exec.LookPath(src)
		if err != nil {
			return "", nil, PlanError{fmt.Errorf("--preload-binary: %s: not found in the PATH of the launch node", src), 127}
		}
		src = found
	} else if !filepath.IsAbs(src) {
		src = filepath.Join(p.Wdir, src)
	}
	src, _ = filepath.Abs(src)
	info, err := os.Stat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, PlanError{fmt.Errorf("--preload-binary: %s: no such file on the launch node", src), 127}
	case err != nil:
		return "", nil, PlanError{fmt.Errorf("--preload-binary: %w", err), 126}
	case !info.Mode().IsRegular():
		return "", nil, PlanError{fmt.Errorf("--preload-binary: %s: not a regular file", src), 126}
	case info.Mode().Perm()&0o111 == 0:
		return "", nil, PlanError{fmt.Errorf("--preload-binary: %s: not executable", src), 126}
	}
	return src, info, nil
}
