package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol"
)

// appContext is one program of the command line: mpirun -np 2 a : -np 4 b
// has two (MPMD), all ranks of one world, numbered in order.
type appContext struct {
	np   int      // 0 = not given
	argv []string // the program and its arguments
	env  []string // its own -x and -env, on top of mpirun's -x
	wdir string   // its own --wdir; "" = mpirun's
}

// programs are the job's app contexts: from --app FILE, else the command
// line, split at each ":".
func programs(c *cli.Context) ([]appContext, error) {
	contexts, err := programsGiven(c)
	if err == nil {
		err = firstEnv(c, contexts)
	}
	return contexts, err
}

func programsGiven(c *cli.Context) ([]appContext, error) {
	path := c.String("app")
	if path == "" {
		return appContexts(c.Args().Slice(), c.Int("np"))
	}
	if c.NArg() > 0 {
		return nil, fmt.Errorf("--app %s and a command (%s): give one or the other", path, c.Args().First())
	}
	return appfileContexts(path)
}

// appContexts splits the command at each ":" argument. The first program
// takes mpirun's own -np (np); each further one starts with its own
// options.
func appContexts(args []string, np int) ([]appContext, error) {
	groups := splitAtColons(args)
	contexts := make([]appContext, len(groups))
	for i, group := range groups {
		var err error
		if i == 0 {
			contexts[0] = appContext{np: np, argv: group}
		} else {
			contexts[i], err = parseContext(group)
		}
		if err == nil {
			err = checkContext(contexts, i)
		}
		if err != nil {
			return nil, fmt.Errorf("program %d of %d (%s): %w", i+1, len(groups), strings.Join(group, " "), err)
		}
	}
	return contexts, nil
}

// checkContext checks program i of contexts. With several programs, each
// needs its count: Open MPI would give each one every slot, which only
// oversubscribes.
func checkContext(contexts []appContext, i int) error {
	switch {
	case len(contexts[i].argv) == 0 && i == 0 && len(contexts) > 1:
		return errors.New("no command before the first ':'")
	case len(contexts[i].argv) == 0 && i > 0:
		return fmt.Errorf("no command after ':' number %d", i)
	case len(contexts[i].argv) == 0:
		return errors.New("no command")
	case len(contexts) > 1 && contexts[i].np == 0:
		return errors.New("no -np: with several programs each needs its own -np")
	}
	return nil
}

// appfileContexts reads Open MPI's appfile (--app FILE): one program per
// line with the options a program takes after ':', '#' comments. Words
// are split at spaces; there is no quoting.
func appfileContexts(path string) ([]appContext, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--app: %w", err)
	}
	var contexts []appContext
	var lines []int
	for n, line := range strings.Split(string(text), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		ctx, err := parseContext(strings.Fields(line))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		contexts, lines = append(contexts, ctx), append(lines, n+1)
	}
	if len(contexts) == 0 {
		return nil, fmt.Errorf("--app %s: no program in it", path)
	}
	for i := range contexts {
		if err := checkContext(contexts, i); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, lines[i], err)
		}
	}
	return contexts, nil
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

// parseContext reads the options of a program after a ":", the ones Open
// MPI and Hydra allow there, up to its command.
func parseContext(args []string) (appContext, error) {
	var ctx appContext
	for i := 0; i < len(args); i++ {
		opt := args[i]
		if !strings.HasPrefix(opt, "-") {
			ctx.argv = args[i:]
			return ctx, nil
		}
		// Counted by the name without its dashes, as set reads it, so that
		// --env takes two values as -env does.
		values := 1
		if name := strings.TrimLeft(opt, "-"); name == "env" || name == "mca" {
			values = 2
		}
		if i+values >= len(args) {
			return ctx, fmt.Errorf("%s needs %d value(s)", opt, values)
		}
		if err := ctx.set(opt, args[i+1:i+1+values]); err != nil {
			return ctx, err
		}
		i += values
	}
	return ctx, nil
}

// set applies one option of a program.
func (ctx *appContext) set(opt string, values []string) error {
	switch strings.TrimLeft(opt, "-") {
	case "np", "n":
		n, err := strconv.Atoi(values[0])
		if err != nil || n < 1 {
			return fmt.Errorf("%s %q: want a count of at least 1", opt, values[0])
		}
		ctx.np = n
	case "x":
		ctx.env = append(ctx.env, values[0])
	case "env":
		ctx.env = append(ctx.env, values[0]+"="+values[1])
	case "mca":
		v, err := mcaVar(opt, values[0], values[1])
		if err != nil {
			return err
		}
		ctx.env = append(ctx.env, v)
	case "wdir", "wd":
		ctx.wdir = absPath(values[0])
	default:
		return fmt.Errorf("unknown option %s (after ':' a program takes -np N, -x VAR[=value], -env VAR value, --mca KEY VALUE and --wdir DIR)", opt)
	}
	return nil
}

// totalRanks is the -np of the whole job: 0 (one rank per slot) for one
// program without -np.
func totalRanks(contexts []appContext) int {
	total := 0
	for _, ctx := range contexts {
		total += ctx.np
	}
	return total
}

// moreApps turns the programs after the first into the Launch's More,
// each with mpirun's environment (env) under its own and mpirun's
// working directory (wdir, wdirSet) unless it has its own.
func moreApps(contexts []appContext, env []string, wdir string, wdirSet bool) ([]protocol.App, error) {
	var more []protocol.App
	first := contexts[0].np
	for i, ctx := range contexts[1:] {
		own, err := exports(ctx.env)
		if err != nil {
			return nil, fmt.Errorf("program %d: %w", i+2, err)
		}
		app := protocol.App{First: first, Argv: ctx.argv, Env: append(append([]string(nil), env...), own...), Wdir: wdir, WdirSet: wdirSet}
		if ctx.wdir != "" {
			app.Wdir, app.WdirSet = ctx.wdir, true
		}
		more = append(more, app)
		first += ctx.np
	}
	return more, nil
}
