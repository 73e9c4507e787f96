package daemon

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"prsh/spawn"
	"prsh/spawn/agent"
)

// rootAgent is mpirun's agent in a driver test: in one job step, a
// Group that starts every node with one call.
func (c *cluster) rootAgent() agent.Agent {
	if c.sc.step {
		return &fakeGroup{fakeAgent{c: c}}
	}
	return &fakeAgent{c: c}
}

// fakeGroup starts a step's orteds as goroutines, each with the id it
// finds in the step's table on stdin, as orted --slurm-step does; a
// refused node's task starts and ends at once, as a task whose orted
// cannot be executed.
type fakeGroup struct{ fakeAgent }

func (g *fakeGroup) StartGroup(ctx context.Context, hosts []string, argv []string, stdin []byte) ([]agent.Process, error) {
	if g.c.groups.Add(1) > 1 {
		return nil, errors.New("a second job step")
	}
	_, table, _ := bytes.Cut(stdin, []byte("\n"))
	i := slices.Index(argv, SlurmStepFlag)
	var procs []agent.Process
	for _, h := range hosts {
		id, err := FindInStepTable(string(table), h)
		if err != nil {
			return nil, err
		}
		if why, ok := g.c.sc.refuse[id]; ok {
			procs = append(procs, endedTask(why))
			continue
		}
		own := slices.Concat(argv[:i], []string{"--id", strconv.Itoa(id), "--node", h}, argv[i+1:])
		p, err := g.Start(ctx, h, own, stdin)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// endedTask is a task that ended as it started, for why.
type endedTask string

func (e endedTask) Wait() error          { return errors.New(string(e)) }
func (endedTask) Alive() <-chan struct{} { return nil }
func (endedTask) Close() error           { return nil }
func (endedTask) Kill() error            { return nil }

// TestStepTable: each orted of a step finds its own id; a node the table
// lacks is named with the table's hosts.
func TestStepTable(t *testing.T) {
	line := string(StepTable([]spawn.Node{{ID: 2, Host: "node3"}, {ID: 3, Host: "node2"}, {ID: 4, Host: "node4"}}))
	if line != "2 node3 3 node2 4 node4\n" {
		t.Errorf("StepTable = %q", line)
	}
	for host, want := range map[string]int{"node3": 2, "node2": 3, "node4": 4} {
		if id, err := FindInStepTable(line, host); id != want || err != nil {
			t.Errorf("FindInStepTable(%s) = %d, %v; want %d", host, id, err, want)
		}
	}
	_, err := FindInStepTable(line, "node9")
	if err == nil || !strings.Contains(err.Error(), "node node9 is not among the job step's hosts (node[2-4])") {
		t.Errorf("FindInStepTable(node9): %v", err)
	}
	if _, err := FindInStepTable("2 node3 3\n", "node3"); err == nil {
		t.Error("a table cut short was read")
	}
}
