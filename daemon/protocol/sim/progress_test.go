package sim

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"prsh/daemon/protocol"
	"prsh/internal/timeouts"
)

// progressRun launches nodes daemons with δ = degree, the given nodes
// calling back slowMS after they started, and returns mpirun's Waiting
// lines ("" for "over"), in order, and every Pending sent, by sender.
func progressRun(t *testing.T, nodes, degree int, slow []int, slowMS int64) ([]string, map[int][]sentPending) {
	t.Helper()
	sent := map[int][]sentPending{}
	var lines []string
	opt := Options{
		Nodes: nodes, Job: protocol.JobSpec{SpawnDegree: degree, KillGraceMS: 3000, Timeouts: timeouts.Timeouts{CallbackMS: 60_000}},
		App:     protocol.Launch{Argv: []string{"app"}, StdinRank: protocol.StdinNone},
		SpawnMS: 10, StartMS: 5, RankMS: 100, Faults: map[int]Fault{},
		OnSend: func(at int64, from, _ int, msg protocol.Message) {
			if p, ok := msg.(protocol.Pending); ok {
				sent[from] = append(sent[from], sentPending{at, p})
			}
		},
		Trace: func(line string) {
			if _, text, ok := strings.Cut(line, " d0 waiting"); ok {
				lines = append(lines, strings.TrimPrefix(text, ": "))
			}
		},
	}
	for r := range nodes {
		opt.App.RankNode = append(opt.App.RankNode, r+1)
	}
	for _, id := range slow {
		opt.Faults[id] = Fault{CallbackMS: slowMS}
	}
	s := New(opt)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(0); err != nil {
		t.Fatal(err)
	}
	if s.Status != 0 || len(s.Errors) > 0 {
		t.Fatalf("mpirun exited %d; sim errors: %v", s.Status, s.Errors)
	}
	return lines, sent
}

type sentPending struct {
	at int64
	p  protocol.Pending
}

// A launch of 512 nodes whose daemons call back at once sends no
// Pending and shows no line.
func TestProgressFastLaunchSilent(t *testing.T) {
	lines, sent := progressRun(t, 512, 8, nil, 0)
	if len(lines) > 0 || len(sent) > 0 {
		t.Fatalf("a fast launch showed %q and sent %d Pending", lines, len(sent))
	}
}

// Twelve slow leaves among 512 nodes: each Pending names at most MaxSlow
// daemons and no daemon sends two within PendingReportMS; mpirun's line
// counts the missing daemons exactly once the reports are up, names
// MaxSlow of them, says how many more, and goes away once.
func TestProgressSlowLeaves(t *testing.T) {
	var slow []int
	for id := 100; len(slow) < 12; id += 37 { // leaves: past 512/8
		slow = append(slow, id)
	}
	lines, sent := progressRun(t, 512, 8, slow, 8000)
	for from, ps := range sent {
		for i, s := range ps {
			if len(s.p.Slow) > protocol.MaxSlow {
				t.Errorf("d%d sent a Pending naming %d daemons: %v", from, len(s.p.Slow), s.p.Slow)
			}
			if i > 0 && s.at-ps[i-1].at < protocol.PendingReportMS {
				t.Errorf("d%d sent Pending at %d and %d ms", from, ps[i-1].at, s.at)
			}
		}
	}
	if len(lines) < 2 || lines[len(lines)-1] != " over" || slices.Contains(lines[:len(lines)-1], " over") {
		t.Fatalf("mpirun's lines: %q; want some, then one \"over\" last", lines)
	}
	last := lines[len(lines)-2]
	m := regexp.MustCompile(`^mpirun: (\d+) of 512 daemons called back; waiting for (.*) and (\d+) more$`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line %q", last)
	}
	names := strings.Split(m[2], ", ")
	up, _ := strconv.Atoi(m[1])
	more, _ := strconv.Atoi(m[3])
	if up != 512-len(slow) || len(names) != protocol.MaxSlow || more != len(slow)-protocol.MaxSlow {
		t.Errorf("last line %q: want %d up, %d names and %d more", last, 512-len(slow), protocol.MaxSlow, len(slow)-protocol.MaxSlow)
	}
	for _, name := range names {
		if !slices.Contains(slow, hostID(name)) {
			t.Errorf("last line %q names %s, which is not slow", last, name)
		}
	}
}

func hostID(name string) int {
	var id int
	fmt.Sscanf(name, "node%d", &id)
	return id
}
