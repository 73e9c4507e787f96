package mpirun

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/job/plan"
)

// parse reads mpirun's command line as main does and returns its
// plan.Request.
func parse(t *testing.T, line string) plan.Request {
	t.Helper()
	var req plan.Request
	app := &cli.App{
		Name: "mpirun", Flags: flags(), DisableSliceFlagSeparator: true,
		Action: func(c *cli.Context) error { req = request(c); return nil },
	}
	if err := app.Run(joinPairs(strings.Fields(line), app.Flags)); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return req
}

// TestRequest: every flag reaches its field of the plan's request, the
// two-valued ones (-genv, -env, --mca, -gmca) as VAR=value, and Hydra's
// -env family is told apart from its -g forms.
func TestRequest(t *testing.T) {
	t.Setenv("MPIEXEC_PORT_RANGE", "")
	t.Setenv("MPIEXEC_TIMEOUT", "")
	req := parse(t, "mpirun -np 4 -H a:2,b -H c --hostfile hf --map-by node:PE=2 -N 1 --cpus-per-rank 2 "+
		"--bind-to core --bynode --bind-to-core --report-bindings --oversubscribe "+
		"-x A -x B=1 -genv G g -genvlist L1,L2 -env E e -envlist M -envall -genvnone "+
		"--mca btl tcp -gmca ess env --spawn-degree auto --spawn-hop-hint 1s --spawn-cost-hint 2ms "+
		"--routed binomial --routed-radix 3 --launch-agent ssh -bootstrap slurm --ssh-config sc --ssh-system-config none "+
		"--ssh-connect-timeout 4s --ssh-max-sessions 5 --callback-timeout 6s --kill-grace 7s --timeouts silence=8s "+
		"--on-unreachable skip --every-host --novm --hold-launch --pmix on --port-range 1-2 --orted od --listen-ip 10.0.0.1 -v "+
		"-s --preload-libs --wdir wd --stdin all --merge-stderr-to-stdout --timeout 9 --display-map "+
		"--display-allocation ./prog arg : -np 1 ./other")
	want := plan.Request{
		Hosts: []string{"a:2,b", "c"}, Hostfile: "hf",
		Args: []string{"./prog", "arg", ":", "-np", "1", "./other"}, NP: 4, NPSet: true,
		Placement: plan.Placement{
			MapBy: "node:PE=2", MapBySet: true, NPerNode: 1, CPUsPerRank: 2, CPUsPerRankSet: true,
			BindTo: "core", BindToSet: true, Oversubscribe: true, ReportBindings: true,
			Older: map[string]bool{"bynode": true, "byslot": false, "bind-to-core": true, "bind-to-socket": false},
		},
		Environment: plan.Environment{
			X: []string{"A", "B=1"}, Genv: []string{"G=g"}, Genvlist: []string{"L1,L2"},
			Env: []string{"E=e"}, Envlist: []string{"M"}, MCA: []string{"btl=tcp"}, GMCA: []string{"ess=env"},
			Genvnone: true, Envall: true, FirstProgramFlags: []string{"envall", "envlist"},
		},
		SpawnDegree: "auto", SpawnDegreeSet: true, SpawnHopHint: time.Second, SpawnCostHint: 2 * time.Millisecond,
		Routed: "binomial", RoutedRadix: 3, LaunchAgent: "ssh", Launcher: "slurm", SSHConfig: "sc", SSHSystemConfig: "none",
		SSHConnectTimeout: 4 * time.Second, SSHMaxSessions: 5, CallbackTimeout: 6 * time.Second,
		KillGrace: 7 * time.Second, Timeouts: "silence=8s", OnUnreachable: "skip", EveryHost: true, HoldLaunch: true, PMIx: "on", PortRange: "1-2",
		Orted: "od", ListenIP: "10.0.0.1", LogLevel: "debug", PreloadBinary: true, PreloadLibs: true,
		Wdir: "wd", Stdin: "all", MergeStderr: true, Timeout: "9", DisplayMap: true, DisplayAllocation: true,
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("got\n%+v\nwant\n%+v", req, want)
	}
}

// TestRequestDefaults: a bare command gets the flags' defaults, and the
// variables of Hydra's and Open MPI's that stand for flags.
func TestRequestDefaults(t *testing.T) {
	t.Setenv("MPIEXEC_PORT_RANGE", "3000:3100")
	t.Setenv("MPIEXEC_TIMEOUT", "60")
	req := parse(t, "mpirun ./prog")
	if req.SpawnDegree != "32" || req.SpawnDegreeSet || req.Routed != "radix" || req.Placement.MapBy != "slot" || req.Placement.MapBySet ||
		req.NPSet || req.Stdin != "0" || req.PMIx != "auto" || req.LogLevel != "warn" || req.OnUnreachable != "abort" ||
		req.SSHMaxSessions != 64 || req.CallbackTimeout != 30*time.Second || req.PortRange != "3000:3100" || req.Timeout != "60" {
		t.Errorf("defaults: %+v", req)
	}
}
