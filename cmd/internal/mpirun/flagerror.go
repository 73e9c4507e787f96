package mpirun

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"prsh/job/compat"
)

// explainFlagError rewords the flag library's "flag provided but not
// defined: -name" with both dashes, and says what to use instead: the
// peers' flag prsh lacks (compat.PeerFlags), or the nearest flag it has.
func explainFlagError(err error, flags []cli.Flag) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	flag := "--" + name
	if len(name) == 1 {
		flag = "-" + name
	}
	if hint, ok := compat.PeerFlags[name]; ok {
		return fmt.Errorf("unknown flag %s: %s", flag, hint)
	}
	if cli.SuggestFlag != nil {
		if s := cli.SuggestFlag(flags, name, true); s != "" {
			return fmt.Errorf("unknown flag %s; did you mean %s?", flag, s)
		}
	}
	return fmt.Errorf("unknown flag %s", flag)
}
