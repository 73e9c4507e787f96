package plan

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"prsh/daemon/protocol"
	"prsh/job/compat"
)

// program is one program of the command line: mpirun -np 2 a : -np 4 b
// has two (MPMD), all ranks of one world, numbered in order.
type program struct {
	np   int      // 0 = not given
	argv []string // the program and its arguments
	env  []string // its own -x and -env, on top of mpirun's -x
	wdir string   // its own --wdir; "" = mpirun's
}

// programs are the job's programs: from the appfile, else the command
// line, split at each ":".
func programs(req Request, here Here) ([]program, error) {
	progs, err := programsGiven(req, here.Dir)
	if err == nil {
		err = firstEnv(req.Environment, progs)
	}
	return progs, err
}

func programsGiven(req Request, dir string) ([]program, error) {
	if req.Appfile == "" {
		return commandPrograms(req.Args, req.NP, dir)
	}
	if len(req.Args) > 0 {
		return nil, fmt.Errorf("--app %s and a command (%s): give one or the other", req.Appfile, req.Args[0])
	}
	return appfilePrograms(req.Appfile, dir)
}

// commandPrograms splits the command at each ":" argument. The first
// program takes mpirun's own -np (np); each further one starts with its
// own options.
func commandPrograms(args []string, np int, dir string) ([]program, error) {
	groups := splitAtColons(args)
	progs := make([]program, len(groups))
	for i, group := range groups {
		var err error
		if i == 0 {
			progs[0] = program{np: np, argv: group}
		} else {
			progs[i], err = parseProgram(group, dir)
		}
		if err == nil {
			err = checkProgram(progs, i)
		}
		if err != nil {
			return nil, fmt.Errorf("program %d of %d (%s): %w", i+1, len(groups), strings.Join(group, " "), err)
		}
	}
	return progs, nil
}

// checkProgram checks program i of progs. With several programs, each
// needs its count: Open MPI would give each one every slot, which only
// oversubscribes.
func checkProgram(progs []program, i int) error {
	switch {
	case len(progs[i].argv) == 0 && i == 0 && len(progs) > 1:
		return errors.New("no command before the first ':'")
	case len(progs[i].argv) == 0 && i > 0:
		return fmt.Errorf("no command after ':' number %d", i)
	case len(progs[i].argv) == 0:
		return errors.New("no command")
	case len(progs) > 1 && progs[i].np == 0:
		return errors.New("no -np: with several programs each needs its own -np")
	}
	return nil
}

// appfilePrograms reads Open MPI's appfile (--app FILE): one program per
// line with the options a program takes after ':', '#' comments. Words
// are split at spaces; there is no quoting.
func appfilePrograms(path, dir string) ([]program, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--app: %w", err)
	}
	var progs []program
	var lines []int
	for n, line := range strings.Split(string(text), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		prog, err := parseProgram(strings.Fields(line), dir)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		progs, lines = append(progs, prog), append(lines, n+1)
	}
	if len(progs) == 0 {
		return nil, fmt.Errorf("--app %s: no program in it", path)
	}
	for i := range progs {
		if err := checkProgram(progs, i); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, lines[i], err)
		}
	}
	return progs, nil
}

// splitAtColons splits args at each argument that is exactly ":".
func splitAtColons(args []string) [][]string {
	groups := [][]string{{}}
	for _, a := range args {
		if a == ":" {
			groups = append(groups, []string{})
			continue
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], a)
	}
	return groups
}

// parseProgram reads the options of a program after a ":", the ones Open
// MPI and Hydra allow there, up to its command; a relative --wdir is
// taken from dir.
func parseProgram(args []string, dir string) (program, error) {
	var prog program
	for i := 0; i < len(args); i++ {
		opt := args[i]
		if !strings.HasPrefix(opt, "-") {
			prog.argv = args[i:]
			return prog, nil
		}
		// Counted by the name without its dashes, as set reads it, so that
		// --env takes two values as -env does.
		values := 1
		if name := strings.TrimLeft(opt, "-"); name == "env" || name == "mca" {
			values = 2
		}
		if i+values >= len(args) {
			return prog, fmt.Errorf("%s needs %d value(s)", opt, values)
		}
		if err := prog.set(opt, args[i+1:i+1+values], dir); err != nil {
			return prog, err
		}
		i += values
	}
	return prog, nil
}

// set applies one option of a program.
func (prog *program) set(opt string, values []string, dir string) error {
	switch strings.TrimLeft(opt, "-") {
	case "np", "n":
		n, err := strconv.Atoi(values[0])
		if err != nil || n < 1 {
			return fmt.Errorf("%s %q: want a count of at least 1", opt, values[0])
		}
		prog.np = n
	case "x":
		prog.env = append(prog.env, values[0])
	case "env":
		prog.env = append(prog.env, values[0]+"="+values[1])
	case "mca":
		v, err := compat.MCAVar(opt, values[0], values[1])
		if err != nil {
			return err
		}
		prog.env = append(prog.env, v)
	case "wdir", "wd":
		prog.wdir = absPath(values[0], dir)
	default:
		return fmt.Errorf("unknown option %s (after ':' a program takes -np N, -x VAR[=value], -env VAR value, --mca KEY VALUE and --wdir DIR)", opt)
	}
	return nil
}

// totalRanks is the -np of the whole job: 0 (one rank per slot) for one
// program without -np.
func totalRanks(progs []program) int {
	total := 0
	for _, prog := range progs {
		total += prog.np
	}
	return total
}

// moreApps turns the programs after the first into the Launch's More,
// each with mpirun's environment (env) under its own and mpirun's
// working directory (wdir, wdirSet) unless it has its own.
func moreApps(progs []program, env []string, wdir string, wdirSet bool, e environ) ([]protocol.App, error) {
	var more []protocol.App
	first := progs[0].np
	for i, prog := range progs[1:] {
		own, err := e.exports(prog.env)
		if err != nil {
			return nil, fmt.Errorf("program %d: %w", i+2, err)
		}
		app := protocol.App{First: first, Argv: prog.argv, Env: append(append([]string(nil), env...), own...), Wdir: wdir, WdirSet: wdirSet}
		if prog.wdir != "" {
			app.Wdir, app.WdirSet = prog.wdir, true
		}
		more = append(more, app)
		first += prog.np
	}
	return more, nil
}
