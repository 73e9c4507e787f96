package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// legal is every move each lifecycle may make, written out by hand: the
// tables must say exactly this, no more, no less.
var legal = map[string][][2]string{
	"launch": {
		{"awaiting the launch", "launch held"},
		{"launch held", "ranks started"},
	},
	"end": {
		{"running", "ending"},
		{"ending", "finished"},
	},
	"session": {
		{"spawning", "running"},
		{"spawning", "ended"},
		{"running", "ended"},
	},
	"call": {
		{"awaited", "alive"},
		{"awaited", "linked"},
		{"alive", "linked"},
		{"linked", "link lost"},
		{"linked", "silent"},
	},
}

// allowed lists the moves a table allows, by state name, over every pair
// of states (and one past the last, which no table knows).
func allowed[S state](t moves[S]) [][2]string {
	var got [][2]string
	for from := S(-1); int(from) <= len(t); from++ {
		for to := S(-1); int(to) <= len(t); to++ {
			if t.allow(from, to) {
				got = append(got, [2]string{from.String(), to.String()})
			}
		}
	}
	return got
}

func TestMoveTables(t *testing.T) {
	for lifecycle, got := range map[string][][2]string{
		"launch":  allowed(launchMoves),
		"end":     allowed(endMoves),
		"session": allowed(sessionMoves),
		"call":    allowed(callMoves),
	} {
		if fmt.Sprint(got) != fmt.Sprint(legal[lifecycle]) {
			t.Errorf("%s: the table allows %v, want %v", lifecycle, got, legal[lifecycle])
		}
	}
}

// Every state has its own name, and a value out of range says so.
func TestStateNames(t *testing.T) {
	names := map[string]bool{}
	for _, s := range []fmt.Stringer{launchAwaited, launchHeld, ranksStarted} {
		names["launch "+s.String()] = true
	}
	for _, s := range []fmt.Stringer{jobRunning, jobEnding, jobFinished} {
		names["end "+s.String()] = true
	}
	for _, s := range []fmt.Stringer{sessionSpawning, sessionRunning, sessionEnded} {
		names["session "+s.String()] = true
	}
	for _, s := range []fmt.Stringer{callAwaited, callAlive, callLinked, callLinkLost, callSilent} {
		names["call "+s.String()] = true
	}
	if len(names) != 14 {
		t.Errorf("%d distinct names for 14 states: %v", len(names), names)
	}
	if got := callState(9).String(); got != "state(9)" {
		t.Errorf("callState(9) is %q", got)
	}
}

// An illegal move is refused: the state stays and a Warn names it.
func TestIllegalMoveWarns(t *testing.T) {
	m, err := New(Config{ID: 0, Parent: -1, Job: JobSpec{Daemons: 3, SpawnDegree: 2, Routed: "radix"}})
	if err != nil {
		t.Fatal(err)
	}
	c := &child{id: 2, session: sessionEnded, call: callSilent}
	if m.moveSession(c, sessionRunning) || c.session != sessionEnded {
		t.Errorf("an ended session moved: now %v", c.session)
	}
	if m.moveCall(c, callLinked) || c.call != callSilent {
		t.Errorf("a silent child linked again: now %v", c.call)
	}
	if m.moveEnd(jobFinished) || m.end != jobRunning {
		t.Errorf("a running job finished without ending: now %v", m.end)
	}
	j := m.jobs[0]
	if !m.moveLaunch(j, launchHeld) || m.moveLaunch(j, launchAwaited) || j.launch != launchHeld {
		t.Errorf("the launch went back: now %v", j.launch)
	}
	want := []string{
		"the session of daemon 2: illegal move from ended to running",
		"the call back of daemon 2: illegal move from silent to linked",
		"the job: illegal move from running to finished",
		"the launch: illegal move from launch held to awaiting the launch",
	}
	var got []string
	for _, a := range m.flush() {
		if w, ok := a.(Warn); ok {
			got = append(got, w.Line)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warned\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A child's two lifecycles move with the driver's events, in either
// order: its sign of life racing its call back, its link ending before
// or after its session. An orted's job runs on after a child fails: the
// failure goes up, and mpirun decides.
func TestChildLifecycle(t *testing.T) {
	for _, c := range []struct {
		name    string
		events  []Event
		session sessionState
		call    callState
		end     endState
	}{
		{"spawned", nil, sessionRunning, callAwaited, jobRunning},
		{"alive", []Event{DaemonAlive{ID: 2}}, sessionRunning, callAlive, jobRunning},
		{"called back", []Event{DaemonAlive{ID: 2}, LinkUp{Link: 7, Peer: 2}}, sessionRunning, callLinked, jobRunning},
		{"alive after its call back", []Event{LinkUp{Link: 7, Peer: 2}, DaemonAlive{ID: 2}}, sessionRunning, callLinked, jobRunning},
		{"went silent", []Event{LinkUp{Link: 7, Peer: 2}, LinkDown{Link: 7, Silent: true}}, sessionRunning, callSilent, jobRunning},
		{"lost, then exited", []Event{LinkUp{Link: 7, Peer: 2}, LinkDown{Link: 7}, DaemonExited{ID: 2}}, sessionEnded, callLinkLost, jobRunning},
		{"exited before calling back", []Event{DaemonExited{ID: 2}}, sessionEnded, callAwaited, jobRunning},
	} {
		m := stagingOrted(t, nil)
		var warned []string
		for _, ev := range c.events {
			for _, w := range actionsOf[Warn](m.Step(ev)) {
				warned = append(warned, w.Line)
			}
		}
		ch := m.children[2]
		if ch.session != c.session || ch.call != c.call || m.end != c.end || len(warned) > 0 {
			t.Errorf("%s: session %v, call %v, job %v, warned %q; want %v, %v, %v, none",
				c.name, ch.session, ch.call, m.end, warned, c.session, c.call, c.end)
		}
	}
}

// A child whose link ends while its session runs is reported once: by its
// session's exit when that follows (a signal, a panic on its stderr say
// why it died), or as the lost link when ExitWaitMS passes first (the
// orted lives on behind a cut link) or the orted left because it lost
// its end too. Nothing goes up in between, and
// nothing stops waiting for its ranks.
func TestLostLinkWaitsForTheExit(t *testing.T) {
	for _, c := range []struct {
		name string
		then Event
		want string
	}{
		{"exit follows", DaemonExited{ID: 2, Err: "signal SEGV: panic: boom"}, "node002: orted exited unexpectedly: signal SEGV: panic: boom"},
		{"no exit", TimerFired{Timer{ExitWaitTimer, 2}}, "node002: lost the link to its orted: EOF"},
		{"its own end lost", DaemonExited{ID: 2, Err: "exit status 1", Orphaned: true}, "node002: lost the link to its orted: EOF"},
	} {
		m := stagingOrted(t, nil)
		m.Step(LinkUp{Link: 7, Peer: 2})
		acts := m.Step(LinkDown{Link: 7, Err: "EOF"})
		if sent := failuresIn(acts); len(sent) > 0 {
			t.Errorf("%s: reported %q before the session's exit or the timer", c.name, sent)
		}
		if timers := actionsOf[SetTimer](acts); len(timers) != 1 || timers[0].Timer != (Timer{ExitWaitTimer, 2}) {
			t.Errorf("%s: timers %+v, want exit-wait(d2)", c.name, timers)
		}
		if m.children[2].failed {
			t.Errorf("%s: given up on before the failure went up", c.name)
		}
		sent := failuresIn(m.Step(c.then))
		if len(sent) != 1 || sent[0] != c.want {
			t.Errorf("%s: reported %q, want %q", c.name, sent, c.want)
		}
		// Whichever came second says nothing more.
		late := []Event{TimerFired{Timer{ExitWaitTimer, 2}}, DaemonExited{ID: 2, Err: "exit status 0"}}
		for _, ev := range late {
			if again := failuresIn(m.Step(ev)); len(again) > 0 {
				t.Errorf("%s: reported again after %T: %q", c.name, ev, again)
			}
		}
	}
}

func failuresIn(acts []Action) []string {
	var msgs []string
	for _, s := range actionsOf[Send](acts) {
		if f, ok := s.Msg.(Failure); ok {
			msgs = append(msgs, f.Msg)
		}
	}
	return msgs
}
