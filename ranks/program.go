package ranks

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"prsh/errmgr/status"
)

// command builds the rank's process from its program: argv[0] looked up
// in the daemon's PATH, or relative to the working directory when it has
// a slash, unless the program's path is given. found holds the lookups
// of the ranks started before, by program.
func (p Program) command(found lookups) (*exec.Cmd, error) {
	if len(p.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	key := lookupKey{argv0: p.Argv[0], path: p.Path, dir: p.Dir, dirSet: p.DirSet}
	l, ok := found[key]
	if !ok {
		l.dir, l.err = p.workingDir()
		l.path = p.Path
		if l.err == nil && l.path == "" {
			l.path, l.err = programPath(p.Argv[0], l.dir)
		}
		found[key] = l
	}
	if l.err != nil {
		return nil, l.err
	}
	return &exec.Cmd{Path: l.path, Args: p.Argv, Dir: l.dir, Env: p.Env}, nil
}

// lookups are where one start's programs were found: a node's ranks
// mostly run one program, and finding it (a stat of the working directory
// and of each PATH entry before its own) cost as much as a rank's pipes.
type lookups map[lookupKey]lookup

type lookupKey struct {
	argv0, path, dir string
	dirSet           bool
}

type lookup struct {
	path, dir string
	err       error
}

// programPath finds argv0 as a shell would: in the PATH, or from the
// working directory when it has a slash.
func programPath(argv0, dir string) (string, error) {
	path := argv0
	if filepath.Base(path) != path && !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	path, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("cannot run %s: %w", argv0, status.UnwrapExec(err))
	}
	return path, nil
}

func (p Program) workingDir() (string, error) {
	if p.Dir != "" {
		if st, err := os.Stat(p.Dir); err == nil && st.IsDir() {
			return p.Dir, nil
		}
		if p.DirSet {
			return "", fmt.Errorf("working directory %s does not exist", p.Dir)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return home, nil
	}
	return "/", nil
}

// rankEnv is what tells the local-th rank of the request who it is.
func (req Request) rankEnv(local int) []string {
	set := func(k string, v int) string { return k + "=" + strconv.Itoa(v) }
	id, localSize := req.Ranks[local].ID, len(req.Ranks)
	return []string{
		set("PRSH_RANK", id), set("PRSH_SIZE", req.Size),
		set("PRSH_LOCAL_RANK", local), set("PRSH_LOCAL_SIZE", localSize),
		"PRSH_NODE=" + req.Node, set("PRSH_NODE_ID", req.NodeID),
		set("OMPI_COMM_WORLD_RANK", id), set("OMPI_COMM_WORLD_SIZE", req.Size),
		set("OMPI_COMM_WORLD_LOCAL_RANK", local), set("OMPI_COMM_WORLD_LOCAL_SIZE", localSize),
		set("OMPI_COMM_WORLD_NODE_RANK", local),
		// Hydra's names, which MPICH users' wrapper scripts read (to
		// pick a GPU, say).
		set("MPI_LOCALRANKID", local), set("MPI_LOCALNRANKS", localSize),
		set("OMPI_APPNUM", req.Ranks[local].AppNum),
	}
}

// oversubscribedVar is Open MPI's word that the rank's node runs more
// ranks than it can run at once: the MPI library then yields the CPU
// while it waits instead of spinning against the ranks it waits for.
// ORTE sets it where a node has more ranks than slots; here it is where
// the node has more ranks than the CPUs they may use (64 ranks of an
// Open MPI barrier on 2 CPUs: a third less CPU).
const oversubscribedVar = "OMPI_MCA_mpi_oversubscribe"

// crowdingEnv is oversubscribedVar=1 where the request's ranks outnumber
// cpus, unless env, the rank's own, sets it already (-x wins).
func (req Request) crowdingEnv(env []string, cpus int) []string {
	if cpus <= 0 || len(req.Ranks) <= cpus {
		return nil
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, oversubscribedVar+"=") {
			return nil
		}
	}
	return []string{oversubscribedVar + "=1"}
}
