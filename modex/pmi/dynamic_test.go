package pmi

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"prsh/modex"
)

// The spawn requests of WIRE.md §9 as the Backend must receive them: the
// scripts check the bytes, these what they mean.

// parentPort is the preput of the ch3 captures.
var parentPort = map[string]string{"PARENT_ROOT_PORT_NAME": "tag#0$description#vm$port#35463$ifname#192.0.2.2$"}

// spawnsOf returns what Spawn was asked.
func spawnsOf(job *memJob) []modex.SpawnRequest {
	job.mu.Lock()
	defer job.mu.Unlock()
	return job.spawns
}

func TestSpawnRequestPMI1(t *testing.T) {
	job := oneRank("")
	cv := startConv(t, job, 0)
	for _, write := range []string{
		"mcmd=spawn\nnprocs=2\nexecname=./c3/spawn2\ntotspawns=2\nspawnssofar=1\narg1=child-arg one\n",
		"arg2=x=y;z\n",
		"argcnt=2\npreput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0=" + parentPort["PARENT_ROOT_PORT_NAME"] +
			"\ninfo_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd\n",
		"mcmd=spawn\nnprocs=1\nexecname=./worker\ntotspawns=2\nspawnssofar=2\nargcnt=0\npreput_num=1\n" +
			"preput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0=x\ninfo_num=0\nendcmd\n",
	} {
		cv.send(write)
	}
	cv.expect("cmd=spawn_result rc=0 errcodes=0,0,0\n")
	got := spawnsOf(job)
	want := []modex.SpawnRequest{{
		Apps: []modex.SpawnApp{
			{Argv: []string{"./c3/spawn2", "child-arg one", "x=y;z"}, NP: 2, Info: map[string]string{"wdir": "/tmp"}},
			{Argv: []string{"./worker"}, NP: 1},
		},
		Preput: parentPort,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Spawn got %+v,\nwant %+v", got, want)
	}
}

func TestSpawnRequestPMI2(t *testing.T) {
	job := oneRank("")
	cv := startConv(t, job, 0)
	cv.fullinit("0", "1")
	cv.send(fr("cmd=spawn;thrid=0x1;ncmds=2;preputcount=1;ppkey0=PARENT_ROOT_PORT_NAME;ppval0=" +
		strings.ReplaceAll(parentPort["PARENT_ROOT_PORT_NAME"], ";", ";;") +
		";subcmd=./c3p2/spawn2;maxprocs=2;argc=2;argv0=child-arg one;argv1=x=y;;z;infokeycount=1;infokey0=wdir;infoval0=/tmp;" +
		"subcmd=./worker;maxprocs=1;argc=0;"))
	cv.expect(fr("cmd=spawn-response;thrid=0x1;rc=0;jobid=kvs_t_1;nerrs=0;"))
	got := spawnsOf(job)
	want := []modex.SpawnRequest{{
		Apps: []modex.SpawnApp{
			{Argv: []string{"./c3p2/spawn2", "child-arg one", "x=y;z"}, NP: 2, Info: map[string]string{"wdir": "/tmp"}},
			{Argv: []string{"./worker"}, NP: 1},
		},
		Preput: parentPort,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Spawn got %+v,\nwant %+v", got, want)
	}
}

// TestSpawnReplyWithoutErrcodes: a PMI-1 reply with one code per rank
// would not fit the client's line; the client assumes zeros without.
func TestSpawnReplyWithoutErrcodes(t *testing.T) {
	cv := startConv(t, oneRank(""), 0)
	cv.send("mcmd=spawn\nnprocs=1000\nexecname=./a\ntotspawns=1\nspawnssofar=1\nendcmd\n")
	cv.expect("cmd=spawn_result rc=0\n")
	cv.finalize1()
}

// blockedSpawn is a Backend whose Spawn waits for its context.
type blockedSpawn struct{ nopBackend }

func (blockedSpawn) Spawn(ctx context.Context, _ modex.SpawnRequest) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// TestCancelEndsAWaitingSpawn: a spawn the daemon never finishes ends
// with the connection's context, like a fence.
func TestCancelEndsAWaitingSpawn(t *testing.T) {
	cv := startConvWith(t, blockedSpawn{})
	cv.send("mcmd=spawn\nnprocs=1\nexecname=./a\ntotspawns=1\nspawnssofar=1\nendcmd\n")
	cv.silent()
	cv.cancel()
	if err := cv.result(); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve returned %v, want context.Canceled", err)
	}
}

func TestSpawnedEnv(t *testing.T) {
	if env := SpawnedEnv(JobInfo{KVSName: "kvs"}); env != nil {
		t.Errorf("a job mpirun started gets %q", env)
	}
	if env := SpawnedEnv(JobInfo{KVSName: "kvs_1", Spawner: "kvs"}); !reflect.DeepEqual(env, []string{"PMI_SPAWNED=1"}) {
		t.Errorf("a spawned job gets %q, want PMI_SPAWNED=1", env)
	}
}
