package plan

import (
	"errors"

	"prsh/daemon"
	"prsh/daemon/protocol"
)

// MakeDVM plans a DVM (mpirun --dvm-start): the daemons of req's hosts,
// spawned as a job's would be, that stay up for the jobs of clients. It
// starts no program; its clients' jobs run without PMIx for now, and
// nothing can be staged or left out (DVM.md, slice 1).
func MakeDVM(req Request, here Here) (daemon.Config, error) {
	switch {
	case len(req.Args) > 0 || req.Appfile != "":
		return daemon.Config{}, usage(errors.New("--dvm-start takes no command: submit jobs with mpirun --dvm URI"))
	case req.OnUnreachable == "skip":
		return daemon.Config{}, usage(errors.New("--dvm-start cannot leave nodes out yet (--on-unreachable skip)"))
	case req.PreloadBinary || req.PreloadLibs:
		return daemon.Config{}, usage(errors.New("--dvm-start cannot stage programs yet (--preload-binary)"))
	}
	// Placed like a job of one rank per slot, whose program never runs.
	req.Args, req.PMIx, req.Stdin = []string{"true"}, "off", "none"
	cfg, err := Make(req, here)
	if err != nil {
		return cfg, err
	}
	cfg.Job.DVM = true
	cfg.App = protocol.Launch{StdinRank: protocol.StdinNone}
	cfg.Remap = nil
	cfg.Timeout = 0 // a job's --timeout (or $MPIEXEC_TIMEOUT) is its own, not the DVM's
	return cfg, nil
}
