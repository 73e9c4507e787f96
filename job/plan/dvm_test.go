package plan

import (
	"bytes"
	"errors"
	"testing"
)

// TestMakeDVM: a DVM's plan launches nothing, keeps the daemons up, has
// no time limit of its own, boots the PMIx servers unless --pmix off
// (auto has no program to look at), leaves out the nodes it cannot reach
// with --on-unreachable skip, and refuses what it cannot do yet.
func TestMakeDVM(t *testing.T) {
	var stderr bytes.Buffer
	req := defaults("n1,n2")
	req.Args, req.Timeout, req.PMIx = nil, "60", "auto"
	cfg, err := MakeDVM(req, launchNode(&stderr))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Job.DVM || len(cfg.App.RankNode) != 0 || cfg.Timeout != 0 || len(cfg.Nodes) != 2 || cfg.Job.NoPMIx {
		t.Errorf("DVM %v, ranks %v, timeout %v, nodes %v, NoPMIx %v", cfg.Job.DVM, cfg.App.RankNode, cfg.Timeout, cfg.Nodes, cfg.Job.NoPMIx)
	}
	req.PMIx = "off"
	if cfg, err := MakeDVM(req, launchNode(&stderr)); err != nil || !cfg.Job.NoPMIx {
		t.Errorf("--pmix off: NoPMIx %v, error %v", cfg.Job.NoPMIx, err)
	}
	req.OnUnreachable = "skip"
	if cfg, err := MakeDVM(req, launchNode(&stderr)); err != nil || !cfg.Job.SkipUnreachable {
		t.Errorf("--on-unreachable skip: SkipUnreachable %v, error %v", cfg.Job.SkipUnreachable, err)
	}
	for _, edit := range []func(*Request){
		func(r *Request) { r.Args = []string{"/bin/true"} },
		func(r *Request) { r.PreloadBinary = true },
	} {
		req := defaults("n1")
		req.Args = nil
		edit(&req)
		if _, err := MakeDVM(req, launchNode(&stderr)); !errors.As(err, new(UsageError)) {
			t.Errorf("MakeDVM(%+v): %v, want a usage error", req, err)
		}
	}
}
