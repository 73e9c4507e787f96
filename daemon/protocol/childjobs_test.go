package protocol

import (
	"slices"
	"testing"

	"prsh/modex"
)

// plainRoot is mpirun of a plain job of one rank on its own node
// (daemon 0, no orted), launched.
func plainRoot(t *testing.T) *Machine {
	t.Helper()
	m, err := New(Config{ID: 0, Node: "login", Parent: -1,
		Job: JobSpec{Daemons: 1, Hosts: []string{"login"}, Routed: "radix", KillGraceMS: 3000},
		App: Launch{Argv: []string{"parent"}, RankNode: RankMap{0}}})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	return m
}

// TestChildJobAtRoot: a request of mpirun's own rank is placed, launched
// as job 1 and answered once its ranks started; the job's end waits for
// the child's; a request placed after its parent's failure is refused
// and its number spent.
func TestChildJobAtRoot(t *testing.T) {
	m := plainRoot(t)
	req := modex.SpawnRequest{Apps: []modex.SpawnApp{{Argv: []string{"child"}, NP: 1}}}
	acts := m.Step(ChildJobWanted{ID: 5, Job: 0, Rank: 0, Req: req})
	place, ok := only[PlaceChildJob](acts)
	if !ok || place.ID != 5 || place.From != 0 || len(place.Used) != 1 || place.Used[0] != 1 {
		t.Fatalf("want one PlaceChildJob of 1 used slot, got %+v", acts)
	}
	acts = m.Step(ChildJobPlaced{ID: 5, From: 0, Job: 0, Rank: 0, Child: 1,
		App: Launch{Argv: []string{"child"}, RankNode: RankMap{0}, Parent: &ParentRank{Name: "p"}, Preput: map[string]string{"k": "v"}}})
	if a, ok := only[ChildJobAnswered](acts); !ok || a.Child != 1 || a.Err != "" {
		t.Fatalf("want the answer job 1 once its rank started, got %+v", acts)
	}
	if v, _ := m.jobs[1].view.Get("k"); v != "v" {
		t.Errorf("the child's key-value space lacks its preput: %q", v)
	}
	if acts = m.Step(RankExited{Job: 0, Rank: 0, How: "exited with status 0"}); has[Exit](acts) {
		t.Fatalf("mpirun ended while its child job runs: %+v", acts)
	}
	m.Step(RankDrained{Job: 0, Rank: 0})
	acts = m.Step(ChildJobPlaced{ID: 6, From: 0, Job: 0, Rank: 0, Child: 2, App: Launch{RankNode: RankMap{0}}})
	if a, ok := only[ChildJobAnswered](acts); !ok || a.Err == "" {
		t.Errorf("a child of a job whose ranks ended: want a refusal, got %+v", acts)
	}
	if !m.released.has(2) {
		t.Error("a refused child's number is not spent")
	}
	m.Step(RankExited{Job: 1, Rank: 0, How: "exited with status 0"})
	if acts = m.Step(RankDrained{Job: 1, Rank: 0}); !has[Exit](acts) {
		t.Errorf("mpirun did not end with its last job: %+v", acts)
	}
}

// only is the one action of type T among acts.
func only[T Action](acts []Action) (T, bool) {
	var found []T
	for _, a := range acts {
		if t, ok := a.(T); ok {
			found = append(found, t)
		}
	}
	if len(found) != 1 {
		var zero T
		return zero, false
	}
	return found[0], true
}

// has says whether acts hold an action of type T.
func has[T Action](acts []Action) bool {
	for _, a := range acts {
		if _, ok := a.(T); ok {
			return true
		}
	}
	return false
}

// TestChildJobAddsDaemon: a child job on a host the job lacks makes
// mpirun spawn an orted there (daemon 1 of a job of one), whose Launch
// waits for its call back; it then gets the Welcome of the grown job,
// the parent job's Launch and its own; a second child job on that host
// uses the same daemon; the job's end reaches it.
func TestChildJobAddsDaemon(t *testing.T) {
	m := plainRoot(t)
	m.Step(ChildJobWanted{ID: 1, Job: 0, Rank: 0, Req: modex.SpawnRequest{}})
	acts := m.Step(ChildJobPlaced{ID: 1, From: 0, Job: 0, Rank: 0, Child: 1, Added: []string{"node9"},
		App: Launch{Argv: []string{"child"}, RankNode: RankMap{-1, -1}}})
	sp, ok := only[Spawn](acts)
	if !ok || sp.Node.ID != 1 || sp.Node.Host != "node9" || has[Send](acts) {
		t.Fatalf("want one Spawn of daemon 1 on node9 and nothing sent, got %+v", acts)
	}
	if job := m.Job(); job.Daemons != 2 || job.Planned != 1 || job.Hosts[1] != "node9" {
		t.Fatalf("the job did not grow: %+v", job)
	}
	if got := m.jobs[1].app.RankNode; got[0] != 1 || got[1] != 1 {
		t.Fatalf("the child's ranks are on %v, want daemon 1", got)
	}
	m.Step(SpawnStarted{ID: 1})
	acts = m.Step(LinkUp{Link: 7, Peer: 1})
	var sent []Message
	for _, a := range acts {
		if s, ok := a.(Send); ok && s.Link == 7 {
			sent = append(sent, s.Msg)
		}
	}
	if len(sent) != 3 {
		t.Fatalf("want the Welcome and two Launches on the link, got %+v", acts)
	}
	w, ok := sent[0].(Welcome)
	if !ok || w.Job.Daemons != 2 || w.Job.Planned != 1 || len(w.Nodes) != 0 {
		t.Errorf("first: %+v, want the grown job's Welcome", sent[0])
	}
	if l, ok := sent[1].(Launch); !ok || l.Job != 0 {
		t.Errorf("second: %+v, want the parent job's Launch", sent[1])
	}
	if l, ok := sent[2].(Launch); !ok || l.Job != 1 || len(l.Added) != 1 || l.Added[0] != "node9" {
		t.Errorf("third: %+v, want the child job's Launch naming the added host", sent[2])
	}
	m.Step(ChildJobWanted{ID: 2, Job: 0, Rank: 0, Req: modex.SpawnRequest{}})
	acts = m.Step(ChildJobPlaced{ID: 2, From: 0, Job: 0, Rank: 0, Child: 2, Added: []string{"node9"},
		App: Launch{Argv: []string{"child"}, RankNode: RankMap{-1}}})
	if has[Spawn](acts) || m.Job().Daemons != 2 || m.jobs[2].app.RankNode[0] != 1 {
		t.Errorf("a second child job on node9 spawned again or went elsewhere: %+v", acts)
	}
	acts = m.Step(Interrupt{Sig: SIGINT, Name: "INT"})
	if !slices.ContainsFunc(acts, func(a Action) bool { s, ok := a.(Send); return ok && s.Link == 7 }) {
		t.Errorf("Ctrl-C sent the added daemon nothing: %+v", acts)
	}
}

// TestAddedDaemonFails: an added daemon that cannot be spawned ends the
// job, even with --on-unreachable skip: its child job waits for it.
func TestAddedDaemonFails(t *testing.T) {
	m, err := New(Config{ID: 0, Node: "login", Parent: -1,
		Job: JobSpec{Daemons: 1, Hosts: []string{"login"}, Routed: "radix", KillGraceMS: 3000, SkipUnreachable: true},
		App: Launch{Argv: []string{"parent"}, RankNode: RankMap{0}}})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Step(ChildJobWanted{ID: 1, Job: 0, Rank: 0, Req: modex.SpawnRequest{}})
	m.Step(ChildJobPlaced{ID: 1, From: 0, Job: 0, Rank: 0, Child: 1, Added: []string{"node9"},
		App: Launch{Argv: []string{"child"}, RankNode: RankMap{-1}}})
	acts := m.Step(SpawnFailed{ID: 1, Err: "ssh: no route to host"})
	p, ok := only[Print](acts)
	if !ok || p.Line != "mpirun: node9: ssh: no route to host" || !m.Ending() {
		t.Errorf("want the job to end with a line naming node9, got %+v", acts)
	}
}

// TestChildJobWaitsForSlots: a request that finds too few free slots
// while a child job runs waits for it to end, then is placed again; one
// whose wait runs out is refused with the placing's line; one that no
// running job could make room for is refused at once. Each placing
// knows the slots the asking job keeps (what no other job's end frees).
func TestChildJobWaitsForSlots(t *testing.T) {
	m := plainRoot(t)
	req := modex.SpawnRequest{Apps: []modex.SpawnApp{{Argv: []string{"child"}, NP: 1}}}
	m.Step(ChildJobWanted{ID: 1, Job: 0, Rank: 0, Req: req})
	m.Step(ChildJobPlaced{ID: 1, From: 0, Job: 0, Rank: 0, Child: 1, App: Launch{Argv: []string{"child"}, RankNode: RankMap{0}}})

	place, ok := only[PlaceChildJob](m.Step(ChildJobWanted{ID: 2, Job: 0, Rank: 0, Req: req}))
	if !ok || place.Used[0] != 2 || place.Kept[0] != 1 {
		t.Fatalf("want the request placed with the parent's and the child's ranks used, the parent's kept, got %+v", place)
	}
	acts := m.Step(ChildJobPlaced{ID: 2, From: 0, Job: 0, Rank: 0, Err: "no slot", NoSlots: true})
	if st, ok := only[SetTimer](acts); !ok || st.Timer.Kind != SlotWaitTimer || has[Print](acts) || has[ChildJobAnswered](acts) {
		t.Fatalf("want the request to wait for slots, got %+v", acts)
	}
	acts = m.Step(RankExited{Job: 1, Rank: 0, How: "exited with status 0"})
	place, ok = only[PlaceChildJob](acts)
	if !ok || place.ID != 2 || place.Used[0] != 1 {
		t.Fatalf("want the request placed again once job 1 ended, with 1 slot used, got %+v", acts)
	}
	acts = m.Step(ChildJobPlaced{ID: 2, From: 0, Job: 0, Rank: 0, Child: 2, App: Launch{Argv: []string{"child"}, RankNode: RankMap{0}}})
	if a, ok := only[ChildJobAnswered](acts); !ok || a.Child != 2 {
		t.Fatalf("want job 2 started and answered, got %+v", acts)
	}

	m.Step(ChildJobWanted{ID: 3, Job: 0, Rank: 0, Req: req})
	m.Step(ChildJobPlaced{ID: 3, From: 0, Job: 0, Rank: 0, Err: "no slot", NoSlots: true})
	acts = m.Step(TimerFired{Timer{Kind: SlotWaitTimer, ID: 1}})
	if acts = m.Step(TimerFired{Timer{Kind: SlotWaitTimer, ID: 2}}); !has[Print](acts) {
		t.Fatalf("the wait ran out: want the line, got %+v", acts)
	}
	if a, ok := only[ChildJobAnswered](acts); !ok || a.Err != "no slot" {
		t.Errorf("the wait ran out: want the refusal, got %+v", acts)
	}

	m.Step(RankExited{Job: 2, Rank: 0, How: "exited with status 0"})
	m.Step(RankDrained{Job: 2, Rank: 0})
	m.Step(ChildJobWanted{ID: 4, Job: 0, Rank: 0, Req: req})
	acts = m.Step(ChildJobPlaced{ID: 4, From: 0, Job: 0, Rank: 0, Err: "no slot", NoSlots: true})
	if a, ok := only[ChildJobAnswered](acts); !ok || a.Err != "no slot" || has[SetTimer](acts) {
		t.Errorf("no other job runs: want the refusal at once, got %+v", acts)
	}
}
