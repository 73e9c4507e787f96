package plan

import (
	"errors"

	"prsh/daemon"
	"prsh/daemon/protocol"
)

// MakeDVM plans a DVM (mpirun --dvm-start): the daemons of req's hosts,
// spawned as a job's would be, that stay up for the jobs of clients. It
// starts no program, so --pmix auto cannot look at one: the daemons boot
// their PMIx server (orted-pmix, where installed) unless --pmix off.
// Nothing can be staged yet (DVM.md); --on-unreachable skip leaves out
// the nodes that cannot be reached, for good.
func MakeDVM(req Request, here Here) (daemon.Config, error) {
	switch {
	case len(req.Args) > 0 || req.Appfile != "":
		return daemon.Config{}, usage(errors.New("--dvm-start takes no command: submit jobs with mpirun --dvm URI"))
	case req.PreloadBinary || req.PreloadLibs:
		return daemon.Config{}, usage(errors.New("--dvm-start cannot stage programs yet (--preload-binary)"))
	}
	// Placed like a job of one rank per slot, whose program never runs.
	req.Args, req.Stdin, req.EveryHost = []string{"true"}, "none", true
	if req.PMIx == "auto" {
		req.PMIx = "on"
	}
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
