package plan

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/protocol"
	"prsh/internal/timeouts"
	"prsh/job"
	"prsh/modex/pmix"
	"prsh/modex/pmix/need"
	"prsh/routed"
	"prsh/stage"
	"prsh/topo"
)

// jobSpec is what every daemon learns of the job: how daemons are
// spawned, routed and bounded, and the hosts (mpirun's first).
func jobSpec(req Request, here Here, m *job.Map) (protocol.JobSpec, error) {
	degree, err := spawnDegree(req, len(m.Nodes))
	if err != nil {
		return protocol.JobSpec{}, usage(err)
	}
	if _, err := routed.New(req.Routed, len(m.Nodes)+1, max(degree, 1)); err != nil {
		return protocol.JobSpec{}, usage(err)
	}
	if err := checkBounds(req); err != nil {
		return protocol.JobSpec{}, usage(err)
	}
	orted, err := ortedPath(req.Orted, here)
	if err != nil {
		return protocol.JobSpec{}, err
	}
	hosts := []string{here.Hostname}
	for _, h := range m.Nodes {
		hosts = append(hosts, h.Name)
	}
	skip, err := onUnreachable(req.OnUnreachable)
	if err != nil {
		return protocol.JobSpec{}, usage(err)
	}
	bounds, err := jobTimeouts(req)
	if err != nil {
		return protocol.JobSpec{}, usage(err)
	}
	return protocol.JobSpec{
		ID:      here.JobID,
		Daemons: len(m.Nodes) + 1, SpawnDegree: degree, SkipUnreachable: skip, HoldLaunch: req.HoldLaunch,
		Routed: req.Routed, RoutedRadix: req.RoutedRadix,
		OrtedPath: orted, LogLevel: req.LogLevel,
		SSHTimeoutMS:    req.SSHConnectTimeout.Milliseconds(),
		Timeouts:        bounds,
		KillGraceMS:     req.KillGrace.Milliseconds(),
		MaxSessions:     req.SSHMaxSessions,
		LaunchAgent:     req.LaunchAgent,
		SSHConfig:       absPath(req.SSHConfig, here.Dir),
		SSHSystemConfig: systemConfig(req, here.Dir),
		Hosts:           hosts,
	}, nil
}

// jobTimeouts are the defaults, changed by --timeouts and then by
// --callback-timeout, the one bound with a flag of its own.
func jobTimeouts(req Request) (timeouts.Timeouts, error) {
	bounds, err := timeouts.Parse(req.Timeouts)
	if err != nil {
		return timeouts.Timeouts{}, fmt.Errorf("--timeouts: %v", err)
	}
	for item := range strings.SplitSeq(req.Timeouts, ",") {
		if strings.HasPrefix(strings.TrimSpace(item), "callback=") {
			return timeouts.Timeouts{}, errors.New("--timeouts: set the callback timeout with --callback-timeout")
		}
	}
	bounds.CallbackMS = req.CallbackTimeout.Milliseconds()
	return bounds, nil
}

func onUnreachable(value string) (skip bool, err error) {
	switch value {
	case "abort":
		return false, nil
	case "skip":
		return true, nil
	}
	return false, fmt.Errorf("--on-unreachable %q: want abort or skip", value)
}

// systemConfig is the system-wide ssh config the daemons read: as given,
// else none when the user's file is named (as ssh -F), else each node's
// own ("").
func systemConfig(req Request, dir string) string {
	switch v := req.SSHSystemConfig; {
	case v == "none":
		return v
	case v != "":
		return absPath(v, dir)
	case req.SSHConfig != "":
		return "none"
	}
	return ""
}

// spawnDegree is --spawn-degree: a number, or auto, topo.BestDegree for
// the nodes and the hints: a hop (a session's start until its orted can
// spawn) and a spawner's cost per session, which is at least a hop shared
// by the sessions it opens at once.
func spawnDegree(req Request, nodes int) (int, error) {
	s := req.SpawnDegree
	if s != "auto" {
		degree, err := strconv.Atoi(s)
		if err != nil || degree < 0 {
			return 0, fmt.Errorf("--spawn-degree must be 0 or more, or auto, not %s", s)
		}
		return degree, nil
	}
	hop, cost := req.SpawnHopHint, req.SpawnCostHint
	if hop <= 0 || cost < 0 {
		return 0, fmt.Errorf("--spawn-hop-hint must be positive and --spawn-cost-hint 0 or more, not %v and %v", hop, cost)
	}
	if sessions := req.SSHMaxSessions; sessions > 0 {
		cost = max(cost, hop/time.Duration(sessions))
	}
	return topo.BestDegree(max(nodes, 1), hop.Microseconds(), cost.Microseconds()), nil
}

// checkBounds rejects timeouts and limits that cannot work: a zero or
// negative timeout would fail every node at once.
func checkBounds(req Request) error {
	for _, bound := range []struct {
		name string
		d    time.Duration
	}{{"ssh-connect-timeout", req.SSHConnectTimeout}, {"callback-timeout", req.CallbackTimeout}} {
		if bound.d <= 0 {
			return fmt.Errorf("--%s must be positive, not %v", bound.name, bound.d)
		}
	}
	if d := req.KillGrace; d < 0 {
		return fmt.Errorf("--kill-grace must be 0 or more, not %v", d)
	}
	if n := req.SSHMaxSessions; n < 1 {
		return fmt.Errorf("--ssh-max-sessions must be at least 1, not %d", n)
	}
	if ip := req.ListenIP; ip != "" && net.ParseIP(ip) == nil {
		return fmt.Errorf("--listen-ip %q: want an IP address of this host, such as 10.0.0.1", ip)
	}
	return nil
}

// ortedPath is --orted, else orted beside mpirun.
func ortedPath(orted string, here Here) (string, error) {
	if orted != "" {
		return absPath(orted, here.Dir), nil
	}
	if here.Executable == "" {
		return "", fmt.Errorf("cannot find orted beside mpirun (use --orted): %w", here.ExecutableErr)
	}
	return filepath.Join(filepath.Dir(here.Executable), "orted"), nil
}

// PMIxSuffix names the daemon built with the PMIx server: orted-pmix,
// beside orted. orted itself is a static Go program without it, which
// starts in less CPU (lab/notebooks/PERFORMANCE.md); a job that may need PMIx
// runs orted-pmix where it is installed, and orted (whose ranks then
// fail naming the cause if they are Open MPI's) where it is not.
const PMIxSuffix = "-pmix"

// withPMIx is the daemon with the PMIx server beside orted, if this
// node has one; the nodes are expected to have what the launch node has.
func withPMIx(orted string) string {
	if st, err := os.Stat(orted + PMIxSuffix); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return orted + PMIxSuffix
	}
	return orted
}

// pmixSegments sets the sizes of the PMIx servers' store segments from
// the job's environment, mpirun's own and then the programs' (-x, -env;
// the last setting wins, as the job must use one), where it sets
// NS_META_SEG_SIZE or NS_DATA_SEG_SIZE: a job whose ranks put larger
// values than the default's segments hold (pmix.Segments).
func pmixSegments(spec *protocol.JobSpec, environ []string, app protocol.Launch) error {
	env := append(slices.Clip(environ), app.Env...)
	for _, more := range app.More {
		env = append(env, more.Env...)
	}
	segs, err := pmix.SegmentsOf(env)
	if err != nil {
		return err
	}
	if segs != pmix.DefaultSegments {
		spec.PMIxMetaSegment, spec.PMIxDataSegment = segs.Meta, segs.Data
	}
	return nil
}

// NoPMIx says whether the orteds may skip their PMIx server (--pmix),
// or a DVM job its namespace: with auto, only when no program of the job
// may use it (modex/pmix/need says why), decided once, here on the
// launch node.
func NoPMIx(mode string, app protocol.Launch, log hclog.Logger) (bool, error) {
	switch mode {
	case "on":
		return false, nil
	case "off":
		return true, nil
	case "auto":
	default:
		return false, fmt.Errorf("--pmix must be auto, on or off, not %q", mode)
	}
	progs := []need.Program{{Argv: app.Argv, Wdir: app.Wdir, Env: app.Env}}
	for _, more := range app.More {
		progs = append(progs, need.Program{Argv: more.Argv, Wdir: more.Wdir, Env: more.Env})
	}
	v := need.Decide(progs)
	log.Debug("PMIx server", "boot", v.Boot, "why", v.Why)
	return !v.Boot, nil
}

// stagePlan lists the files --preload-binary and --preload-libs stage on
// every node: each program of the job and, with libs, what it loads.
func stagePlan(req Request, self string, app protocol.Launch) ([]protocol.StagedFile, error) {
	libs := req.PreloadLibs
	if !req.PreloadBinary && !libs {
		return nil, nil
	}
	progs := []stage.Program{{Arg: app.Argv[0], Wdir: app.Wdir}}
	for _, more := range app.More {
		progs = append(progs, stage.Program{Arg: more.Argv[0], Wdir: more.Wdir})
	}
	return stage.Plan(self, progs, libs)
}

// timeout parses --timeout: seconds as a plain number, like Open MPI, or
// a Go duration such as 90s or 2h.
func timeout(value string) (time.Duration, error) {
	if value == "" {
		return 0, nil
	}
	if s, err := strconv.ParseFloat(value, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--timeout %q: want seconds or a duration such as 90s", value)
	}
	return d, nil
}
