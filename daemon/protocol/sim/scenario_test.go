package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"prsh/daemon/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata/")

// TestScenarios runs each testdata/*.txt scenario on the simulated
// cluster and compares the trace with the golden one below its "----".
// A scenario reads like a story: the cluster, what goes wrong when, and
// then every action of every daemon in virtual time. Run with -update to
// rewrite the traces after a deliberate change, and read the diff.
//
// Directives, one per line before "----":
//
//	cluster nodes=N degree=δ routed=radix|binomial|direct [skip] [hold] [step] [ranks=R]
//	        [rank-ms=T|forever] [timeout=MS] [grace=MS] [callback=MS]
//	        [fences=K] [allgathers=G] [ring]
//	                            each rank runs K PMI fences, G allgathers
//	                            (and a ring), then finalises
//	group RANKS [leave=R]       each of RANKS ("0,2", "1-3") fences over
//	                            them before its job fences; rank R
//	                            finalises and exits instead
//	leave R                     rank R finalises and exits at once,
//	                            entering no fence
//	rank R exits S              rank R exits with status S
//	refuse N "why"              node N's spawn fails (in a step: its task
//	                            starts and ends at once)
//	no-callback N               node N's orted never calls back
//	silent N                    node N's session starts, its orted never does
//	slow N callback=MS          node N's orted calls back MS after it started
//	die N at=T                  node N's orted is killed at time T
//	hang N at=T                 node N's orted is stopped (SIGSTOP) at time T
//	interrupt NAME at=T         mpirun gets SIGNAME at time T
//	childjob D #ID job=J rank=R np=K at=T [nodes=D,D…] [rank-ms=T] [add=H,H…]
//	         [fail=R status=S] [refuse="why"]
//	                            rank R of job J (on daemon D) asks for a
//	                            child job of K ranks; its rank R exits
//	                            with S; refuse: mpirun cannot place it
func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata/")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			script, want, _ := strings.Cut(string(text), "----\n")
			got, err := play(script)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(file, []byte(script+"----\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s: the trace differs (run with -update and read the diff):\n%s", file, diffLines(want, got))
			}
		})
	}
}

// play runs a scenario script and returns its trace.
func play(script string) (string, error) {
	var out strings.Builder
	opt := Options{SpawnMS: 10, StartMS: 5, RankMS: 100, Faults: map[int]Fault{}, RankStatus: map[int]int{}}
	opt.Job = protocol.JobSpec{Routed: "radix", KillGraceMS: 3000}
	opt.Trace = func(line string) { out.WriteString(line + "\n") }
	ranks := -1
	var timed []func(s *Sim)
	for n, line := range strings.Split(script, "\n") {
		f := fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		kv := keyValues(f[1:])
		bad := func(err error) error { return fmt.Errorf("line %d: %q: %v", n+1, line, err) }
		switch f[0] {
		case "cluster":
			opt.Nodes = kv.int("nodes")
			opt.Job.SpawnDegree = kv.int("degree")
			if r := kv["routed"]; r != "" {
				opt.Job.Routed = r
			}
			opt.Job.SkipUnreachable = kv.has("skip")
			opt.Job.HoldLaunch = kv.has("hold")
			opt.Job.OneStep = kv.has("step")
			opt.Job.SrunJob = kv["srun-job"]
			opt.Job.DVM = kv.has("dvm")
			if kv.has("ranks") {
				ranks = kv.int("ranks")
			}
			if kv["rank-ms"] == "forever" {
				opt.RankMS = -1
			} else if kv.has("rank-ms") {
				opt.RankMS = int64(kv.int("rank-ms"))
			}
			opt.TimeoutMS = int64(kv.int("timeout"))
			if kv.has("grace") {
				opt.Job.KillGraceMS = int64(kv.int("grace"))
			}
			opt.Job.Timeouts.CallbackMS = int64(kv.int("callback"))
			opt.Fences = kv.int("fences")
			opt.Allgathers = kv.int("allgathers")
			opt.Ring = kv.has("ring")
		case "group": // group RANKS [leave=R]: a fence over RANKS ("0,2", "1-3")
			g, ok := protocol.GroupRanks(f[1], 1<<20)
			if !ok {
				return "", bad(fmt.Errorf("not a list of ranks"))
			}
			opt.Groups = append(opt.Groups, g)
			if kv.has("leave") {
				if opt.Leave == nil {
					opt.Leave = map[int]bool{}
				}
				opt.Leave[kv.int("leave")] = true
			}
		case "leave":
			if opt.Leave == nil {
				opt.Leave = map[int]bool{}
			}
			opt.Leave[atoi(f[1])] = true
		case "rank":
			r, _ := strconv.Atoi(f[1])
			s, _ := strconv.Atoi(f[3])
			opt.RankStatus[r] = s
		case "refuse":
			opt.Faults[atoi(f[1])] = Fault{Refuse: strings.Trim(strings.Join(f[2:], " "), `"`)}
		case "no-callback":
			opt.Faults[atoi(f[1])] = Fault{NoCallback: true}
		case "cancelled": // cancelled N: N's session ends with Slurm's cancel line
			id := atoi(f[1])
			fault := opt.Faults[id]
			fault.Cancelled = true
			opt.Faults[id] = fault
		case "silent":
			opt.Faults[atoi(f[1])] = Fault{Silent: true}
		case "slow": // slow N callback=MS
			opt.Faults[atoi(f[1])] = Fault{CallbackMS: int64(kv.int("callback"))}
		case "die":
			id, at := atoi(f[1]), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.Kill(id) }) })
		case "hang":
			id, at := atoi(f[1]), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.Hang(id) }) })
		case "dmodex": // dmodex D #ID rank=R at=T
			id, req, rank, at := atoi(f[1]), atoi(strings.TrimPrefix(f[2], "#")), kv.int("rank"), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.WantModex(id, req, rank) }) })
		case "submit": // submit job=N at=T [rank=R status=S] [rank-ms=T] [nodes=D,D…] [nopmix]
			job, at, status := kv.int("job"), int64(kv.int("at")), map[int]int{}
			if kv.has("rank") {
				status[kv.int("rank")] = kv.int("status")
			}
			ms := int64(kv.int("rank-ms"))
			var nodes []int
			if kv.has("nodes") {
				for _, d := range strings.Split(kv["nodes"], ",") {
					nodes = append(nodes, atoi(d))
				}
			}
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.Submit(job, status, ms, kv.has("nopmix"), nodes...) }) })
		case "childjob": // childjob D #ID job=J rank=R np=K at=T [nodes=D,D…] [rank-ms=T] [fail=R status=S] [refuse="why"] [add=H,H…]
			id, req, at := atoi(f[1]), atoi(strings.TrimPrefix(f[2], "#")), int64(kv.int("at"))
			job, rank := kv.int("job"), kv.int("rank")
			o := ChildJobOrder{NP: kv.int("np"), MS: int64(kv.int("rank-ms")), Status: map[int]int{}, Refuse: quoted(line, "refuse=")}
			if kv.has("fail") {
				o.Status[kv.int("fail")] = kv.int("status")
			}
			if kv.has("nodes") {
				for _, d := range strings.Split(kv["nodes"], ",") {
					o.Nodes = append(o.Nodes, atoi(d))
				}
			}
			if kv.has("add") {
				o.Added = strings.Split(kv["add"], ",")
			}
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.WantChildJob(id, req, job, rank, o) }) })
		case "job-signal": // job-signal SIG job=N at=T
			name, job, at := f[1], kv.int("job"), int64(kv.int("at"))
			sig, ok := signals[name]
			if !ok {
				return "", bad(fmt.Errorf("unknown signal"))
			}
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.JobSignal(job, sig, name) }) })
		case "publish": // publish D #ID job=N rank=R key=K value=V [job-only] at=T
			id, req, at := atoi(f[1]), atoi(strings.TrimPrefix(f[2], "#")), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) {
				s.At(at, func() { s.Publish(id, req, kv.int("job"), kv.int("rank"), kv["key"], kv["value"], kv.has("job-only")) })
			})
		case "lookup": // lookup D #ID job=N rank=R keys=K,K [wait] [timeout=MS] at=T
			id, req, at := atoi(f[1]), atoi(strings.TrimPrefix(f[2], "#")), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) {
				s.At(at, func() {
					s.Lookup(id, req, kv.int("job"), kv.int("rank"), strings.Split(kv["keys"], ","), kv.has("wait"), int64(kv.int("timeout")))
				})
			})
		case "unpublish": // unpublish D #ID job=N rank=R keys=K,K at=T
			id, req, at := atoi(f[1]), atoi(strings.TrimPrefix(f[2], "#")), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) {
				s.At(at, func() { s.Unpublish(id, req, kv.int("job"), kv.int("rank"), strings.Split(kv["keys"], ",")) })
			})
		case "across": // across D job=N rank=R group=NAME at=T: a fence over several jobs
			id, at := atoi(f[1]), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) {
				s.At(at, func() {
					if err := s.EnterAcross(id, kv.int("job"), kv.int("rank"), kv["group"]); err != nil {
						s.Errors = append(s.Errors, err.Error())
					}
				})
			})
		case "finalize": // finalize D job=N rank=R at=T
			id, at := atoi(f[1]), int64(kv.int("at"))
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.Finalize(id, kv.int("job"), kv.int("rank")) }) })
		case "stop":
			at := int64(kv.int("at"))
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.StopDVM() }) })
		case "interrupt":
			name, at := f[1], int64(kv.int("at"))
			sig, ok := signals[name]
			if !ok {
				return "", bad(fmt.Errorf("unknown signal"))
			}
			timed = append(timed, func(s *Sim) { s.At(at, func() { s.Interrupt(sig, name) }) })
		default:
			return "", bad(fmt.Errorf("unknown directive"))
		}
	}
	if ranks < 0 {
		ranks = opt.Nodes
	}
	opt.App = protocol.Launch{Argv: []string{"app"}, StdinRank: 0}
	for r := range ranks {
		opt.App.RankNode = append(opt.App.RankNode, 1+r%opt.Nodes)
	}
	opt.Remap = func(skipped map[int]bool) ([]int, error) {
		var up []int
		for id := 1; id <= opt.Nodes; id++ {
			if !skipped[id] {
				up = append(up, id)
			}
		}
		if len(up) == 0 {
			return nil, fmt.Errorf("no node left to run on")
		}
		out := make([]int, ranks)
		for r := range out {
			out[r] = up[r%len(up)]
		}
		return out, nil
	}
	s := New(opt)
	for _, f := range timed {
		f(s)
	}
	if err := s.Start(); err != nil {
		return "", err
	}
	s.Run(10 * 60 * 1000)
	fmt.Fprintf(&out, "-- mpirun exit status %d at %dms\n", s.Status, s.ExitAt)
	for _, l := range s.Stderr {
		fmt.Fprintf(&out, "-- stderr: %s\n", l)
	}
	if len(s.RunningAtExit) > 0 {
		fmt.Fprintf(&out, "-- running when mpirun exited: %v\n", s.RunningAtExit)
	}
	fmt.Fprintf(&out, "-- left running: %v\n", s.Running())
	for _, e := range s.Errors {
		fmt.Fprintf(&out, "-- error: %s\n", e)
	}
	return out.String(), nil
}

var signals = map[string]int{"INT": 2, "TERM": 15, "HUP": 1, "TSTP": 20, "CONT": 18, "USR1": 10}

// fields splits a line at spaces, keeping "quoted strings" whole.
func fields(line string) []string {
	var out []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			end := strings.Index(line[1:], `"`) + 2
			if end < 2 {
				end = len(line)
			}
			out = append(out, line[:end])
			line = line[end:]
			continue
		}
		f, rest, _ := strings.Cut(line, " ")
		out = append(out, f)
		line = rest
	}
	return out
}

// quoted is the "quoted text" after key= in line, or "".
func quoted(line, key string) string {
	_, rest, ok := strings.Cut(line, key+`"`)
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(rest, `"`)
	return text
}

type keyValue map[string]string

func keyValues(f []string) keyValue {
	kv := keyValue{}
	for _, x := range f {
		k, v, _ := strings.Cut(x, "=")
		kv[k] = v
	}
	return kv
}

func (kv keyValue) has(k string) bool { _, ok := kv[k]; return ok }
func (kv keyValue) int(k string) int  { return atoi(kv[k]) }

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// diffLines shows the first lines where want and got part.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(same lines)"
}
