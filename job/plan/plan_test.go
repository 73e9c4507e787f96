package plan

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon"
	"prsh/daemon/protocol"
	"prsh/internal/timeouts"
	"prsh/job"
	"prsh/job/binding"
	"prsh/modex/pmix"
	"prsh/spawn"
	"prsh/spawn/agent"
)

// defaults is a request as mpirun's flags give it when only the command
// (true) and -H are given; --pmix off keeps need from reading programs.
func defaults(hosts ...string) Request {
	return Request{
		Hosts: hosts, Args: []string{"true"},
		Placement:   Placement{MapBy: "slot"},
		SpawnDegree: "32", SpawnHopHint: 300 * time.Millisecond, SpawnCostHint: 10 * time.Millisecond,
		Routed: "radix", SSHConnectTimeout: 10 * time.Second, SSHMaxSessions: 64,
		CallbackTimeout: 30 * time.Second, KillGrace: 3 * time.Second, OnUnreachable: "abort",
		PMIx: "off", LogLevel: "warn", Stdin: "0",
	}
}

// launchNode is the node mpirun runs on in these tests, called
// "launch", with environ and its warnings in stderr.
func launchNode(stderr *bytes.Buffer, environ ...string) Here {
	return Here{
		Hostname: "launch", Dir: "/work", Environ: environ, CPUs: 4, Executable: "/opt/prsh/bin/mpirun",
		JobID: "prsh_1_2", Log: hclog.NewNullLogger(), Stderr: stderr,
	}
}

func make1(t *testing.T, req Request, environ ...string) (daemon.Config, string) {
	t.Helper()
	var stderr bytes.Buffer
	cfg, err := Make(req, launchNode(&stderr, environ...))
	if err != nil {
		t.Fatalf("Make: %v", err)
	}
	return cfg, stderr.String()
}

// TestPlacement: where ranks go, which daemon serves which host, and this
// host first among several so that mpirun forks its orted.
func TestPlacement(t *testing.T) {
	cases := []struct {
		name     string
		hosts    []string
		edit     func(*Request)
		nodes    []string // daemons 1.., by host
		rankNode []int
	}{
		{"one per slot", []string{"a:2,b"}, nil, []string{"a", "b"}, []int{1, 1, 2}},
		{"by node", []string{"a:2,b:2"}, func(r *Request) { r.NP, r.NPSet, r.Placement.MapBy, r.Placement.MapBySet = 3, true, "node", true },
			[]string{"a", "b"}, []int{1, 2, 1}},
		{"older --bynode", []string{"a:2,b:2"}, func(r *Request) { r.NP, r.NPSet, r.Placement.Older = 3, true, map[string]bool{"bynode": true} },
			[]string{"a", "b"}, []int{1, 2, 1}},
		{"ppr", []string{"a:4,b:4"}, func(r *Request) { r.Placement.MapBy, r.Placement.MapBySet = "ppr:1:node", true },
			[]string{"a", "b"}, []int{1, 2}},
		{"PE=2", []string{"a:4,b:4"}, func(r *Request) { r.Placement.MapBy, r.Placement.MapBySet = "slot:PE=2", true },
			[]string{"a", "b"}, []int{1, 1, 2, 2}},
		{"npernode", []string{"a:4", "b:4"}, func(r *Request) { r.Placement.NPerNode = 1 }, []string{"a", "b"}, []int{1, 2}},
		{"oversubscribe modifier", []string{"a"}, func(r *Request) {
			r.NP, r.NPSet, r.Placement.MapBy, r.Placement.MapBySet = 3, true, "slot:OVERSUBSCRIBE", true
		}, []string{"a"}, []int{1, 1, 1}},
		{"this host moves first", []string{"a,localhost,b"}, nil, []string{"localhost", "a", "b"}, []int{2, 1, 3}},
		{"by its own name", []string{"a,launch"}, nil, []string{"launch", "a"}, []int{2, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults(tc.hosts...)
			req.ListenIP = "10.0.0.1"
			req.LaunchAgent = "ssh %h"
			if tc.edit != nil {
				tc.edit(&req)
			}
			cfg, _ := make1(t, req)
			var hosts []string
			for i, n := range cfg.Nodes {
				if n.ID != i+1 {
					t.Errorf("node %d has daemon %d", i, n.ID)
				}
				hosts = append(hosts, n.Host)
			}
			if !slices.Equal(hosts, tc.nodes) || !slices.Equal(cfg.App.RankNode, tc.rankNode) {
				t.Errorf("nodes %v, ranks on %v; want %v, %v", hosts, cfg.App.RankNode, tc.nodes, tc.rankNode)
			}
			if want := append([]string{"launch"}, tc.nodes...); !slices.Equal(cfg.Job.Hosts, want) || cfg.Job.Daemons != len(want) {
				t.Errorf("job hosts %v (%d daemons), want %v", cfg.Job.Hosts, cfg.Job.Daemons, want)
			}
		})
	}
}

// TestRemap: with --on-unreachable skip, the ranks are placed again on
// the nodes that came up, in the user's order of hosts, by daemon id.
func TestRemap(t *testing.T) {
	cases := []struct {
		name    string
		hosts   string
		np      int
		skipped []int
		want    []int
		err     string
	}{
		{"default -np shrinks", "a:2,b:2,c:2", 0, []int{2}, []int{1, 1, 3, 3}, ""},
		{"this host moved first", "a:2,localhost:2,b:2", 0, []int{2}, []int{1, 1, 3, 3}, ""},
		{"by node", "a:2,b:2,c:2", 0, nil, []int{1, 1, 2, 2, 3, 3}, ""},
		{"too few slots", "a:2,b:2", 4, []int{1}, nil, "placing the ranks on the 1 nodes that came up: "},
		{"none left", "a,b", 0, []int{1, 2}, nil, "no node could be reached"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults(tc.hosts)
			req.NP, req.NPSet = tc.np, tc.np > 0
			req.OnUnreachable, req.ListenIP, req.LaunchAgent = "skip", "10.0.0.1", "ssh %h"
			cfg, _ := make1(t, req)
			if !cfg.Job.SkipUnreachable {
				t.Error("SkipUnreachable not set")
			}
			skipped := map[int]bool{}
			for _, id := range tc.skipped {
				skipped[id] = true
			}
			got, err := cfg.Remap(skipped)
			if !slices.Equal(got, tc.want) || !strings.HasPrefix(errText(err), tc.err) || (err == nil) != (tc.err == "") {
				t.Errorf("Remap(%v) = %v, %v; want %v, %q", tc.skipped, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestAgentAndAddress: none for this host alone (mpirun runs its
// ranks), the user's command if given, native ssh for other hosts; a
// fork for this host when the job needs PMIx (split with ssh when this
// host is among others); mpirun listens on loopback when all is local.
// A job for a DVM (Submit) gets neither.
func TestAgentAndAddress(t *testing.T) {
	config := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		hosts  []string
		agent  string
		pmix   string
		listen string
		want   string // the agent's type
		bind   string
	}{
		{"this host alone", []string{"localhost"}, "", "off", "", "none", "127.0.0.1"},
		{"by its name", []string{"launch:2"}, "", "off", "", "none", "127.0.0.1"},
		{"this host, PMIx", []string{"localhost"}, "", "on", "", "*agent.Fork", "127.0.0.1"},
		{"the user's command", []string{"a,b"}, "srun -N1 -n1 -w %h", "off", "10.1.1.1", "*agent.Command", "10.1.1.1"},
		{"command for this host too", []string{"localhost"}, "sh -c %h", "off", "", "*agent.Command", "127.0.0.1"},
		{"ssh", []string{"a,b"}, "", "off", "10.1.1.1", "*agent.SSH", "10.1.1.1"},
		{"ssh, and mpirun here", []string{"a,localhost"}, "", "off", "10.1.1.2", "*agent.SSH", "10.1.1.2"},
		{"ssh and a fork, PMIx", []string{"a,localhost"}, "", "on", "10.1.1.2", "*agent.Split", "10.1.1.2"},
	}
	submit := defaults("a,b")
	submit.SSHConfig, submit.PMIx, submit.Submit = config, "off", true
	if cfg, _ := make1(t, submit); cfg.Agent != nil || cfg.Bind != "" {
		t.Errorf("a job for a DVM: agent %s listening on %q, want none (its daemons run)", typeName(cfg.Agent), cfg.Bind)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults(tc.hosts...)
			req.LaunchAgent, req.ListenIP, req.SSHConfig, req.PMIx = tc.agent, tc.listen, config, tc.pmix
			cfg, _ := make1(t, req)
			if got := typeName(cfg.Agent); got != tc.want || cfg.Bind != tc.bind {
				t.Errorf("agent %s listening on %q, want %s on %q", got, cfg.Bind, tc.want, tc.bind)
			}
			if split, ok := cfg.Agent.(*agent.Split); ok && split.Local != "localhost" {
				t.Errorf("split forks for %q, want localhost", split.Local)
			}
			if cfg.Job.SSHConfig != config || cfg.Job.SSHSystemConfig != "none" {
				t.Errorf("ssh configs %q, %q; want %q, none", cfg.Job.SSHConfig, cfg.Job.SSHSystemConfig, config)
			}
		})
	}
}

func typeName(a agent.Agent) string {
	switch a.(type) {
	case *agent.Fork:
		return "*agent.Fork"
	case *agent.Command:
		return "*agent.Command"
	case *agent.SSH:
		return "*agent.SSH"
	case *agent.Split:
		return "*agent.Split"
	case nil:
		return "none"
	}
	return "?"
}

// TestJobSpec: the flags every daemon learns, and paths taken from
// mpirun's directory; mpirun is the daemon of this host, named as the
// host list does.
func TestJobSpec(t *testing.T) {
	req := defaults("localhost")
	req.SpawnDegree, req.Routed, req.RoutedRadix, req.HoldLaunch = "4", "binomial", 2, true
	req.CallbackTimeout, req.KillGrace, req.SSHMaxSessions = 5*time.Second, 0, 8
	req.SSHConfig, req.SSHSystemConfig, req.Orted = "cfg", "/etc/sys", "bin/orted"
	req.LogLevel, req.PortRange, req.Timeout = "debug", "5000:5010", "1.5"
	req.Timeouts = "silence=5s, guard-stopped=6s"
	cfg, _ := make1(t, req)
	bounds := timeouts.Default()
	bounds.CallbackMS, bounds.SilenceMS, bounds.GuardStoppedMS = 5000, 5000, 6000
	want := protocol.JobSpec{
		ID: "prsh_1_2", Daemons: 1, SpawnDegree: 4, HoldLaunch: true, Routed: "binomial", RoutedRadix: 2,
		OrtedPath: "/work/bin/orted", LogLevel: "debug", SSHTimeoutMS: 10000, Timeouts: bounds, KillGraceMS: 0,
		MaxSessions: 8, SSHConfig: "/work/cfg", SSHSystemConfig: "/etc/sys", Hosts: []string{"localhost"},
		PortRange: "5000-5010", NoPMIx: true,
	}
	if got := cfg.Job; !reflect.DeepEqual(got, want) {
		t.Errorf("job spec\n%+v\nwant\n%+v", got, want)
	}
	if cfg.Timeout != 1500*time.Millisecond || cfg.Node != "localhost" || cfg.Ports.String() != "5000-5010" {
		t.Errorf("timeout %v, node %q, ports %v", cfg.Timeout, cfg.Node, cfg.Ports)
	}
}

// TestSpawnDegreeAuto: auto takes the degree whose tree is fastest for
// the hints, the cost at least a hop shared by the sessions.
func TestSpawnDegreeAuto(t *testing.T) {
	req := defaults()
	req.SpawnDegree = "auto"
	for _, nodes := range []int{1, 16, 1000} {
		got, err := spawnDegree(req, nodes)
		if err != nil || got < 1 {
			t.Errorf("%d nodes: degree %d, %v", nodes, got, err)
		}
	}
	req.SpawnHopHint = 0
	if _, err := spawnDegree(req, 4); errText(err) != "--spawn-hop-hint must be positive and --spawn-cost-hint 0 or more, not 0s and 10ms" {
		t.Errorf("zero hop: %v", err)
	}
}

// TestOrtedAndPMIx: orted beside mpirun, orted-pmix beside it for a job
// that may need PMIx when it is installed, --orted as given.
func TestOrtedAndPMIx(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"mpirun", "orted", "orted" + PMIxSuffix} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		pmix, orted string
		want        string
		noPMIx      bool
	}{
		{"on", "", filepath.Join(dir, "orted-pmix"), false},
		{"off", "", filepath.Join(dir, "orted"), true},
		{"on", "/x/orted", "/x/orted", false},
	}
	for _, tc := range cases {
		req := defaults("localhost")
		req.PMIx, req.Orted = tc.pmix, tc.orted
		var stderr bytes.Buffer
		here := launchNode(&stderr)
		here.Executable = filepath.Join(dir, "mpirun")
		cfg, err := Make(req, here)
		if err != nil || cfg.Job.OrtedPath != tc.want || cfg.Job.NoPMIx != tc.noPMIx {
			t.Errorf("--pmix %s --orted %q: %q (no PMIx %v), %v; want %q", tc.pmix, tc.orted, cfg.Job.OrtedPath, cfg.Job.NoPMIx, err, tc.want)
		}
	}
	req := defaults("localhost")
	var stderr bytes.Buffer
	here := launchNode(&stderr)
	here.Executable, here.ExecutableErr = "", errors.New("no /proc")
	if _, err := Make(req, here); errText(err) != "cannot find orted beside mpirun (use --orted): no /proc" || errors.As(err, new(UsageError)) {
		t.Errorf("no executable: %v", err)
	}
}

// TestPMIxSegments: the job's NS_META_SEG_SIZE and NS_DATA_SEG_SIZE,
// from mpirun's environment or -x (which wins), reach every daemon in the
// JobSpec; without them the JobSpec says nothing (the default's).
func TestPMIxSegments(t *testing.T) {
	cases := []struct {
		environ, x []string
		meta, data int64
	}{
		{nil, nil, 0, 0},
		{[]string{"NS_DATA_SEG_SIZE=8388608"}, nil, pmix.DefaultSegments.Meta, 8 << 20},
		{[]string{"NS_DATA_SEG_SIZE=8388608"}, []string{"NS_DATA_SEG_SIZE=4194304", "NS_META_SEG_SIZE=65536"}, 64 << 10, 4 << 20},
	}
	for _, tc := range cases {
		req := defaults("localhost")
		req.PMIx, req.Environment.X = "on", tc.x
		var stderr bytes.Buffer
		here := launchNode(&stderr)
		here.Environ = append(here.Environ, tc.environ...)
		cfg, err := Make(req, here)
		if err != nil || cfg.Job.PMIxMetaSegment != tc.meta || cfg.Job.PMIxDataSegment != tc.data {
			t.Errorf("environment %q, -x %q: %d, %d (%v); want %d, %d", tc.environ, tc.x,
				cfg.Job.PMIxMetaSegment, cfg.Job.PMIxDataSegment, err, tc.meta, tc.data)
		}
	}
}

// TestRankless: the orteds no rank is placed on, as a list; none when
// every orted has ranks, and none past the list's bound.
func TestRankless(t *testing.T) {
	cases := []struct {
		daemons  int
		rankNode protocol.RankMap
		want     string
	}{
		{4, protocol.RankMap{1, 2, 3}, ""},
		{5, protocol.RankMap{0, 1}, "2-4"},
		{6, protocol.RankMap{2, 4, 2}, "1,3,5"},
	}
	for _, tc := range cases {
		if got := rankless(tc.daemons, tc.rankNode); got != tc.want {
			t.Errorf("%d daemons, ranks on %v: %q, want %q", tc.daemons, tc.rankNode, got, tc.want)
		}
	}
	every := make(protocol.RankMap, 0, 5000)
	for d := 2; d < 10000; d += 2 {
		every = append(every, d)
	}
	if got := rankless(10000, every); got != "" {
		t.Errorf("every other one of 10000: %d bytes, want none", len(got))
	}
	req := defaults("a,b,c")
	req.NP, req.EveryHost = 1, true
	cfg, _ := make1(t, req)
	if cfg.Job.Rankless != "2-3" {
		t.Errorf("one rank on three nodes, --every-host: rankless %q, want 2-3", cfg.Job.Rankless)
	}
}

// TestIdleHostsLeftOut: hosts that get no rank get no orted; they are
// the spare hosts of child jobs. --every-host, --on-unreachable skip and
// a DVM keep them.
func TestIdleHostsLeftOut(t *testing.T) {
	req := defaults("a:2,b:2,c:2,d:2")
	req.NP, req.NPSet = 3, true
	req.Placement.MapBy, req.Placement.MapBySet = "node", true
	cfg, _ := make1(t, req)
	if !slices.Equal(cfg.Job.Hosts, []string{"launch", "a", "b", "c"}) || len(cfg.Nodes) != 3 {
		t.Errorf("--map-by node, 3 ranks on 4 hosts: daemons on %v (nodes %v), want a, b, c", cfg.Job.Hosts, cfg.Nodes)
	}
	if !slices.Equal(cfg.App.RankNode, protocol.RankMap{1, 2, 3}) {
		t.Errorf("ranks on daemons %v, want 1 2 3", cfg.App.RankNode)
	}
	if want := []job.Host{{Name: "d", Slots: 2}}; !slices.Equal(cfg.ChildJobs.Spare, want) || !slices.Equal(cfg.ChildJobs.Slots, []int{0, 2, 2, 2}) {
		t.Errorf("child jobs' slots %v, spare %v; want 0 2 2 2 and %v", cfg.ChildJobs.Slots, cfg.ChildJobs.Spare, want)
	}

	req.Placement.MapBy = "slot"
	cfg, _ = make1(t, req)
	if !slices.Equal(cfg.Job.Hosts, []string{"launch", "a", "b"}) || len(cfg.ChildJobs.Spare) != 2 {
		t.Errorf("by slot: daemons on %v, spare %v; want a, b and c, d spare", cfg.Job.Hosts, cfg.ChildJobs.Spare)
	}

	for name, keep := range map[string]func(*Request){
		"--every-host":          func(r *Request) { r.EveryHost = true },
		"--on-unreachable skip": func(r *Request) { r.OnUnreachable = "skip" },
	} {
		r := req
		keep(&r)
		cfg, _ := make1(t, r)
		if len(cfg.Job.Hosts) != 5 || len(cfg.ChildJobs.Spare) != 0 {
			t.Errorf("%s: daemons on %v, spare %v; want all four hosts", name, cfg.Job.Hosts, cfg.ChildJobs.Spare)
		}
	}
}

// TestApplication: the launch message's programs, directories, input
// and binding.
func TestApplication(t *testing.T) {
	req := defaults("a:5")
	req.LaunchAgent, req.ListenIP = "ssh %h", "10.0.0.1"
	req.Args = []string{"./server", "-v", ":", "-np", "3", "--wdir", "sub", "./client", ":", "-n", "1", "./watch"}
	req.NP, req.NPSet = 1, true
	req.Stdin, req.MergeStderr = "all", true
	req.Placement.BindTo, req.Placement.BindToSet = "core", true
	cfg, _ := make1(t, req)
	app := cfg.App
	if !slices.Equal(app.Argv, []string{"./server", "-v"}) || app.Wdir != "/work" || app.WdirSet || app.StdinRank != protocol.StdinAll || !app.MergeStderr {
		t.Errorf("first program %+v", app)
	}
	if len(app.More) != 2 || app.More[0].First != 1 || app.More[0].Wdir != "/work/sub" || !app.More[0].WdirSet ||
		app.More[1].First != 4 || app.More[1].Wdir != "/work" || !slices.Equal(app.More[1].Argv, []string{"./watch"}) {
		t.Errorf("more programs %+v", app.More)
	}
	if want := (binding.Policy{Unit: binding.Core, PE: 1, Spread: binding.Socket}); app.Bind != want {
		t.Errorf("binding %+v, want %+v", app.Bind, want)
	}
}

// TestProgramOptions: an option after ':' takes its values however many
// dashes it is written with, and one short of them is an error, not a
// crash.
func TestProgramOptions(t *testing.T) {
	prog, err := parseProgram([]string{"--env", "A", "b", "-mca", "k", "v", "--np", "2", "prog", "arg"}, "/work")
	if err != nil || !slices.Equal(prog.env, []string{"A=b", "OMPI_MCA_k=v"}) || prog.np != 2 || !slices.Equal(prog.argv, []string{"prog", "arg"}) {
		t.Errorf("got %+v, %v", prog, err)
	}
	for _, args := range [][]string{{"--env", "A"}, {"--mca", "k"}, {"-np"}} {
		if _, err := parseProgram(args, "/work"); err == nil || !strings.Contains(err.Error(), "needs") {
			t.Errorf("%v: error %v", args, err)
		}
	}
}

// TestAppfile: one program per line, comments and blank lines aside,
// errors named by line.
func TestAppfile(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		path := filepath.Join(dir, "app")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	progs, err := appfilePrograms(write("# two\n-np 2 -x A=1 ./a\n\n-np 1 --wdir w ./b x # b\n"), "/work")
	if err != nil || len(progs) != 2 || progs[0].np != 2 || !slices.Equal(progs[0].env, []string{"A=1"}) ||
		progs[1].wdir != "/work/w" || !slices.Equal(progs[1].argv, []string{"./b", "x"}) {
		t.Errorf("got %+v, %v", progs, err)
	}
	path := write("-np 2 ./a\n./b\n")
	if _, err := appfilePrograms(path, "/work"); errText(err) != path+":2: no -np: with several programs each needs its own -np" {
		t.Errorf("missing -np: %v", err)
	}
}

// TestUsageErrors: each mistake's message, word for word, and that it
// is the user's (mpirun points to --help).
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Request)
		err  string
	}{
		{"no command", func(r *Request) { r.Args = nil }, "no command given"},
		{"-np 0", func(r *Request) { r.NP, r.NPSet = 0, true }, "-np must be at least 1, not 0"},
		{"too many ranks", func(r *Request) { r.NP, r.NPSet = 9, true }, "hosts from -H"},
		{"ppr and npernode", func(r *Request) {
			r.Placement.MapBy, r.Placement.MapBySet, r.Placement.NPerNode = "ppr:2:node", true, 3
		},
			"--map-by ppr:2:node and -npernode 3 disagree"},
		{"ppr past -np", func(r *Request) {
			r.Placement.MapBy, r.Placement.MapBySet, r.NP, r.NPSet = "ppr:1:node", true, 3, true
		}, "-np 3 exceeds the 1 rank that --map-by ppr:1:node allows on 1 node; raise it or add hosts"},
		{"PE=0", func(r *Request) { r.Placement.MapBy, r.Placement.MapBySet = "slot:PE=0", true },
			`--map-by "slot:PE=0": PE=0: want a count of cores of at least 1`},
		{"PE and cpus-per-rank", func(r *Request) {
			r.Placement.MapBy, r.Placement.MapBySet, r.Placement.CPUsPerRank, r.Placement.CPUsPerRankSet = "slot:PE=2", true, 3, true
		}, "--cpus-per-rank 3 and --map-by slot:PE=2 disagree on the cores per rank"},
		{"bind-to unknown", func(r *Request) { r.Placement.BindTo, r.Placement.BindToSet = "rack", true },
			`--bind-to "rack": want none, hwthread, core, l3cache, numa, socket or board (with :overload-allowed to let ranks share)`},
		{"bind-to and PE", func(r *Request) {
			r.Placement.BindTo, r.Placement.BindToSet, r.Placement.CPUsPerRank, r.Placement.CPUsPerRankSet = "socket", true, 2, true
		}, "--cpus-per-rank 2 binds each rank to 2 cores: use --bind-to core, or leave --bind-to out"},
		{"bind-to qualifier", func(r *Request) { r.Placement.BindTo, r.Placement.BindToSet = "core:often", true },
			`--bind-to "core:often": unknown qualifier "often" (want overload-allowed, if-supported or a count of cores per rank)`},
		{"older and newer", func(r *Request) {
			r.Placement.BindTo, r.Placement.BindToSet, r.Placement.Older = "numa", true, map[string]bool{"bind-to-core": true}
		}, "--bind-to-core and --bind-to numa contradict each other"},
		{"both this host", func(r *Request) { r.Hosts = []string{"localhost,launch"} }, "the hosts localhost and launch are both this host: name it once"},
		{"spawn degree", func(r *Request) { r.SpawnDegree = "-1" }, "--spawn-degree must be 0 or more, or auto, not -1"},
		{"routed", func(r *Request) { r.Routed = "star" }, "star"},
		{"callback", func(r *Request) { r.CallbackTimeout = 0 }, "--callback-timeout must be positive, not 0s"},
		{"kill grace", func(r *Request) { r.KillGrace = -time.Second }, "--kill-grace must be 0 or more, not -1s"},
		{"timeouts", func(r *Request) { r.Timeouts = "silence=40s" }, "--timeouts: timeout guard-stopped (30s) must be longer than silence (40s)"},
		{"timeouts' callback", func(r *Request) { r.Timeouts = "drain=1s, callback=2s" }, "--timeouts: set the callback timeout with --callback-timeout"},
		{"sessions", func(r *Request) { r.SSHMaxSessions = 0 }, "--ssh-max-sessions must be at least 1, not 0"},
		{"listen-ip", func(r *Request) { r.ListenIP = "node1" }, `--listen-ip "node1": want an IP address of this host, such as 10.0.0.1`},
		{"on-unreachable", func(r *Request) { r.OnUnreachable = "retry" }, `--on-unreachable "retry": want abort or skip`},
		{"launch agent", func(r *Request) { r.LaunchAgent = "ssh 'x" }, "--launch-agent: launch template"},
		{"stdin", func(r *Request) { r.Stdin = "4" }, `--stdin "4": want a rank from 0 to 3, all or none`},
		{"timeout", func(r *Request) { r.Timeout = "soon" }, `--timeout "soon": want seconds or a duration such as 90s`},
		{"port range", func(r *Request) { r.PortRange = "9-1" }, "--port-range: "},
		{"pmix", func(r *Request) { r.PMIx = "maybe" }, `--pmix must be auto, on or off, not "maybe"`},
		{"pmix segment", func(r *Request) { r.Environment.X = []string{"NS_DATA_SEG_SIZE=1k"} }, "NS_DATA_SEG_SIZE=1k: want a size in bytes, at least 4096"},
		{"genvall and genvnone", func(r *Request) { r.Environment.Genvall, r.Environment.Envnone = true, true },
			"-genvall and -genvnone contradict each other"},
		{"-x no name", func(r *Request) { r.Environment.X = []string{"=1"} }, `-x "=1": no variable name`},
		{"-x bad glob", func(r *Request) { r.Environment.X = []string{"A["} }, `-x "A[": not a variable name or a pattern such as 'OMP_*'`},
		{"-genv", func(r *Request) { r.Environment.Genv = []string{"=1"} }, `-genv "=1": want -genv VAR value`},
		{"-env", func(r *Request) { r.Environment.Env = []string{"=1"} }, `-env "=1": want -env VAR value`},
		{"-envall with MPMD", func(r *Request) {
			r.Args, r.NP, r.NPSet = []string{"a", ":", "-np", "1", "b"}, 1, true
			r.Environment.Envall, r.Environment.FirstProgramFlags = true, []string{"envall"}
		}, "-envall before the first of several programs: Hydra applies it to that program alone, which prsh cannot; give -genvall for every program"},
		{"MPMD without -np", func(r *Request) { r.Args = []string{"a", ":", "-np", "1", "b"} },
			"program 1 of 2 (a): no -np: with several programs each needs its own -np"},
		{"MPMD too many", func(r *Request) { r.Args, r.NP, r.NPSet = []string{"a", ":", "-np", "8", "b"}, 1, true },
			"the -np of the 2 programs add up to 9: "},
		{"empty after colon", func(r *Request) { r.Args, r.NP, r.NPSet = []string{"a", ":"}, 1, true },
			"program 2 of 2 (): no command after ':' number 1"},
		{"app and command", func(r *Request) { r.Appfile = "f" }, "--app f and a command (true): give one or the other"},
		{"-mca after ':'", func(r *Request) {
			r.Args, r.NP, r.NPSet = []string{"a", ":", "-np", "1", "-mca", "a.b", "1", "b"}, 1, true
		},
			`program 2 of 2 (-np 1 -mca a.b 1 b): -mca "a.b" "1": want -mca KEY VALUE, KEY of letters, digits and '_'`},
		{"unknown after ':'", func(r *Request) { r.Args, r.NP, r.NPSet = []string{"a", ":", "--host", "x", "b"}, 1, true },
			"program 2 of 2 (--host x b): unknown option --host (after ':' a program takes -np N, -x VAR[=value], -env VAR value, --mca KEY VALUE and --wdir DIR)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults("localhost:4")
			tc.edit(&req)
			var stderr bytes.Buffer
			_, err := Make(req, launchNode(&stderr))
			var wrong UsageError
			if !errors.As(err, &wrong) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v (usage: %v), want one with %q", err, errors.As(err, &wrong), tc.err)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestOwnNode: with this host among the job's nodes and no PMIx needed,
// mpirun is its daemon (0) and the others keep their order as 1..n-1;
// with PMIx, this host's daemon is an orted (1), forked. Without a
// node that did not come up (--on-unreachable skip) the ranks go again
// to the daemons that did.
func TestOwnNode(t *testing.T) {
	cases := []struct {
		name     string
		pmix     string
		nodes    []spawn.Node
		hosts    []string
		rankNode []int
		a        int   // a's daemon
		withoutA []int // the ranks' daemons once a's is skipped
	}{
		{"no PMIx", "off", []spawn.Node{{ID: 1, Host: "a"}, {ID: 2, Host: "b"}},
			[]string{"localhost", "a", "b"}, []int{1, 0, 2}, 1, []int{0, 2}},
		{"PMIx", "on", []spawn.Node{{ID: 1, Host: "localhost"}, {ID: 2, Host: "a"}, {ID: 3, Host: "b"}},
			[]string{"launch", "localhost", "a", "b"}, []int{2, 1, 3}, 2, []int{1, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := defaults("a,localhost,b")
			req.ListenIP, req.PMIx, req.SSHConfig = "10.0.0.1", tc.pmix, os.DevNull
			cfg, _ := make1(t, req)
			if !slices.Equal(cfg.Nodes, tc.nodes) || !slices.Equal(cfg.Job.Hosts, tc.hosts) ||
				cfg.Job.Daemons != len(tc.hosts) || !slices.Equal(cfg.App.RankNode, tc.rankNode) {
				t.Errorf("nodes %v, hosts %v, %d daemons, ranks on %v; want %v, %v, %d, %v",
					cfg.Nodes, cfg.Job.Hosts, cfg.Job.Daemons, cfg.App.RankNode, tc.nodes, tc.hosts, len(tc.hosts), tc.rankNode)
			}
			if cfg.Node != tc.hosts[0] {
				t.Errorf("mpirun's node %q, want %q", cfg.Node, tc.hosts[0])
			}
			if got, err := cfg.Remap(map[int]bool{tc.a: true}); err != nil || !slices.Equal(got, tc.withoutA) {
				t.Errorf("without a, ranks on %v (%v), want %v", got, err, tc.withoutA)
			}
		})
	}
}
