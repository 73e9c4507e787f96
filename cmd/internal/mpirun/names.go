package mpirun

import "github.com/urfave/cli/v2"

// The flag library looks a flag up by asking every flag for its names,
// and works them out anew (a regexp each) at every ask; after parsing it
// asks whether each name of each flag is set, so an mpirun of 70 flags
// spent milliseconds there, before its first daemon could start. These
// wrappers work the names out once. Each embeds the library's own type,
// so that every other method, and the help, stay the library's.
type (
	boolNames struct {
		names []string
		*cli.BoolFlag
	}
	durationNames struct {
		names []string
		*cli.DurationFlag
	}
	genericNames struct {
		names []string
		*cli.GenericFlag
	}
	intNames struct {
		names []string
		*cli.IntFlag
	}
	stringNames struct {
		names []string
		*cli.StringFlag
	}
	sliceNames struct {
		names []string
		*cli.StringSliceFlag
	}
)

func (f boolNames) Names() []string     { return f.names }
func (f durationNames) Names() []string { return f.names }
func (f genericNames) Names() []string  { return f.names }
func (f intNames) Names() []string      { return f.names }
func (f stringNames) Names() []string   { return f.names }
func (f sliceNames) Names() []string    { return f.names }

// namedOnce wraps each flag of a type mpirun uses.
func namedOnce(flags []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(flags))
	for i, f := range flags {
		names := f.Names()
		switch f := f.(type) {
		case *cli.BoolFlag:
			out[i] = boolNames{names, f}
		case *cli.DurationFlag:
			out[i] = durationNames{names, f}
		case *cli.GenericFlag:
			out[i] = genericNames{names, f}
		case *cli.IntFlag:
			out[i] = intNames{names, f}
		case *cli.StringFlag:
			out[i] = stringNames{names, f}
		case *cli.StringSliceFlag:
			out[i] = sliceNames{names, f}
		default:
			out[i] = f
		}
	}
	return out
}

// isSwitch says whether f takes no value.
func isSwitch(f cli.Flag) bool {
	switch f.(type) {
	case *cli.BoolFlag, boolNames:
		return true
	}
	return false
}
