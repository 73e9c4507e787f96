package client

import (
	"errors"
	"reflect"
	"testing"

	"prsh/modex"
)

// dynamic is what both wires offer beyond the key-value space.
type dynamic interface {
	Publish(service, port string) error
	Lookup(service string) (string, error)
	Unpublish(service string) error
}

// wire runs a test over one dialect: a connected client of a 1-rank
// fakeJob and its spawn, which gives the job id ("" for PMI-1).
type wire struct {
	name    string
	connect func(t *testing.T, job *fakeJob) (dynamic, func(modex.SpawnRequest) (string, error))
}

var wires = []wire{
	{"pmi2", func(t *testing.T, job *fakeJob) (dynamic, func(modex.SpawnRequest) (string, error)) {
		client, server := socketPair(t)
		t.Cleanup(func() { client.Close() })
		serveRank(t, job, 0, server)
		c, err := InitConn(client, 0, "job1")
		if err != nil {
			t.Fatal(err)
		}
		return c, c.Spawn
	}},
	{"pmi1", func(t *testing.T, job *fakeJob) (dynamic, func(modex.SpawnRequest) (string, error)) {
		client, server := socketPair(t)
		t.Cleanup(func() { client.Close() })
		serveRank(t, job, 0, server)
		s, err := InitSimple(client)
		if err != nil {
			t.Fatal(err)
		}
		return s, func(req modex.SpawnRequest) (string, error) { return "", s.Spawn(req) }
	}},
}

// twoApps is an MPI_Comm_spawn_multiple with what the wires must keep:
// spaces, '=' and ';' in arguments, info per app, the preput.
var twoApps = modex.SpawnRequest{
	Apps: []modex.SpawnApp{
		{Argv: []string{"./master", "child-arg one", "x=y;z"}, NP: 2, Info: map[string]string{"wdir": "/tmp", "host": "n1,n2"}},
		{Argv: []string{"./worker"}, NP: 3},
	},
	Preput: map[string]string{"PARENT_ROOT_PORT_NAME": "tag#0$port#1$"},
}

func TestSpawn(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			job := newFakeJob(1)
			_, spawn := w.connect(t, job)
			id, err := spawn(twoApps)
			if err != nil {
				t.Fatal(err)
			}
			if w.name == "pmi2" && id != "kvs_fake_1" {
				t.Errorf("job id %q, want kvs_fake_1", id)
			}
			job.mu.Lock()
			got := job.spawns
			job.spawnErr = errors.New("no slots left")
			job.mu.Unlock()
			if len(got) != 1 || !reflect.DeepEqual(got[0], twoApps) {
				t.Errorf("the launcher was asked %+v, want %+v", got, twoApps)
			}
			var se *ServerError
			if _, err := spawn(twoApps); !errors.As(err, &se) {
				t.Errorf("refused spawn: %v, want a *ServerError", err)
			}
			withEnv := modex.SpawnRequest{Apps: []modex.SpawnApp{{Argv: []string{"./a"}, NP: 1, Env: []string{"A=1"}}}}
			if _, err := spawn(withEnv); !errors.Is(err, ErrUnsupported) {
				t.Errorf("spawn with an environment: %v, want ErrUnsupported", err)
			}
			if _, err := spawn(modex.SpawnRequest{Apps: []modex.SpawnApp{{Argv: []string{"./a"}}}}); !errors.Is(err, ErrUnsupported) {
				t.Errorf("spawn of no rank: %v, want ErrUnsupported", err)
			}
		})
	}
}

func TestNameService(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			c, _ := w.connect(t, newFakeJob(1))
			const port = "tag#0$description#vm$port#40000$"
			if err := c.Publish("ocean", port); err != nil {
				t.Fatal(err)
			}
			var se *ServerError
			if err := c.Publish("ocean", "other"); !errors.As(err, &se) {
				t.Errorf("second publish: %v, want a *ServerError", err)
			}
			if got, err := c.Lookup("ocean"); err != nil || got != port {
				t.Errorf("lookup: %q, %v; want %q", got, err, port)
			}
			if err := c.Unpublish("ocean"); err != nil {
				t.Error(err)
			}
			if _, err := c.Lookup("ocean"); !errors.As(err, &se) {
				t.Errorf("lookup after unpublish: %v, want a *ServerError", err)
			}
			if err := c.Unpublish("ocean"); !errors.As(err, &se) {
				t.Errorf("second unpublish: %v, want a *ServerError", err)
			}
		})
	}
}

// TestSpawner: a spawned job's ranks know who spawned them.
func TestSpawner(t *testing.T) {
	job := newFakeJob(1)
	job.spawner = "kvs_parent"
	c, _ := wires[0].connect(t, job)
	if got := c.(*Client).Spawner(); got != "kvs_parent" {
		t.Errorf("Spawner() = %q, want kvs_parent", got)
	}
	plain, _ := wires[0].connect(t, newFakeJob(1))
	if got := plain.(*Client).Spawner(); got != "" {
		t.Errorf("Spawner() of a job mpirun started = %q, want \"\"", got)
	}
}
