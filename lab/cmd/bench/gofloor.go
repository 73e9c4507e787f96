package main

// --go-floor: Hydra with the Go runtime's start added where a launcher
// written in Go has a process. Its time is the least such a launcher can
// take on this machine if its own code cost no more than Hydra's C.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// goFloorFlag asks for the floor rows.
const goFloorFlag = "go-floor"

const goFloorUsage = "also run Hydra with bin/gostart (the Go runtime's start, then exec) in front of mpiexec and 1 or 2 times in front of each proxy: the floor of a Go launcher with that many processes a node"

// goFloorLauncher is Hydra's mpiexec with one or two Go starts in front
// of each proxy and one in front of itself.
type goFloorLauncher struct {
	name string
	argv []string // gostart, mpiexec.hydra; Hydra's options follow
}

// goFloorPrograms are the programs a floor runs: Hydra's.
var goFloorPrograms = []string{progTrue, progMPICH}

// command is the floor's command line with Hydra's options.
func (f goFloorLauncher) command(hydra ...string) []string {
	return append(slices.Clone(f.argv), hydra...)
}

// goFloorLaunchers lays out dir (which every node must see) with a copy
// of mpiexec.hydra per floor, beside which Hydra looks for its proxy:
// there gostart stands in as hydra_pmi_proxy. gostart is bin/gostart.
func goFloorLaunchers(dir, gostart string) ([]goFloorLauncher, error) {
	mpiexec, err := resolved("mpiexec.hydra")
	if err != nil {
		return nil, err
	}
	proxy, err := resolved("hydra_pmi_proxy")
	if err != nil {
		return nil, err
	}
	var launchers []goFloorLauncher
	for _, starts := range []int{1, 2} {
		d := filepath.Join(dir, fmt.Sprintf("go-floor-%d", starts))
		files := map[string]string{"mpiexec.hydra": mpiexec, "hydra_pmi_proxy": gostart}
		if starts == 2 {
			files["gostart"] = gostart
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		for name, from := range files {
			if err := copyExecutable(from, filepath.Join(d, name)); err != nil {
				return nil, err
			}
		}
		real := filepath.Join(d, "hydra_pmi_proxy.real")
		os.Remove(real)
		if err := os.Symlink(proxy, real); err != nil {
			return nil, err
		}
		launchers = append(launchers, goFloorLauncher{
			name: fmt.Sprintf("hydra+Go×%d", starts),
			argv: []string{gostart, filepath.Join(d, "mpiexec.hydra")},
		})
	}
	return launchers, nil
}

// resolved is the file name runs, symlinks followed.
func resolved(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", goFloorFlag, err)
	}
	return filepath.EvalSymlinks(path)
}

// copyExecutable copies from to a new file to: Hydra finds its proxy
// beside its own executable, so a symlink to it would not do.
func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	os.Remove(to)
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
