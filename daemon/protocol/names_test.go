package protocol

import (
	"slices"
	"testing"
)

// The name service's table at mpirun, request by request (the golden
// scenario names.txt tells the same with the messages).
func TestNameService(t *testing.T) {
	m := &Machine{}
	ns := &nameService{names: map[nameKey]Name{}, waiting: map[int]NameLookup{}}
	pub := func(job, rank int, jobOnly bool, kv ...string) string {
		r := NamePublish{Job: job, Rank: rank, JobOnly: jobOnly}
		for i := 0; i+1 < len(kv); i += 2 {
			r.Names = append(r.Names, Name{Key: kv[i], Value: kv[i+1]})
		}
		return ns.publish(r).Err
	}
	look := func(job int, wait bool, keys ...string) (NameReply, bool) {
		return ns.lookup(m, NameLookup{ID: 7, Job: job, Keys: keys, Wait: wait, TimeoutMS: 50})
	}
	if err := pub(1, 0, false, "a", "1", "b", "2"); err != "" {
		t.Fatalf("publish: %s", err)
	}
	if err := pub(2, 0, false, "c", "3", "a", "9"); err != NameDuplicate {
		t.Errorf("publish of a name taken: %q, want %q", err, NameDuplicate)
	}
	if r, _ := look(2, false, "c"); r.Err != NameNotFound {
		t.Errorf("a publish refused stored a name: %+v", r)
	}
	if r, ok := look(2, false, "a", "x"); !ok || len(r.Names) != 1 || r.Names[0].Value != "1" || r.Names[0].Job != 1 {
		t.Errorf("lookup of one name published of two, no wait: %+v", r)
	}
	if pub(1, 1, true, "mine", "m") != "" || pub(2, 0, true, "mine", "n") != "" {
		t.Error("a name of a job's own may be published by each job")
	}
	if r, _ := look(2, false, "mine"); len(r.Names) != 1 || r.Names[0].Value != "n" {
		t.Errorf("job 2 sees its own name only: %+v", r)
	}
	if _, ok := look(3, true, "late"); ok {
		t.Fatal("a lookup that waits was answered before its name came")
	}
	if !slices.Contains(m.flush(), Action(SetTimer{Timer{Kind: LookupTimer, ID: 1}, 50})) {
		t.Error("a lookup that waits with a timeout sets its timer")
	}
	pub(1, 0, false, "late", "l")
	if got := ns.serveWaiting(m); len(got) != 1 || got[0].Names[0].Value != "l" || len(ns.waiting) != 0 {
		t.Errorf("the waiting lookup once its name came: %+v", got)
	}
	if r := ns.unpublish(NameUnpublish{Job: 2, Rank: 0, Keys: []string{"a"}}); r.Err != NameNotFound {
		t.Errorf("another rank's name withdrawn: %+v", r)
	}
	if r := ns.unpublish(NameUnpublish{Job: 1, Rank: 0}); r.Err != "" {
		t.Errorf("withdrawing all of a rank's names: %+v", r)
	}
	if r, _ := look(1, false, "a", "b", "late"); r.Err != NameNotFound {
		t.Errorf("after unpublish of all: %+v", r)
	}
}

func TestAcrossName(t *testing.T) {
	got := AcrossName([]JobRanks{{Job: 1, Ranks: []int{0, 1, 2}}, {Job: 4, Ranks: []int{1, 3}}})
	if got != "1:0-2|4:1,3" || !IsAcross(got) || IsAcross("0-2,4") {
		t.Errorf("AcrossName: %q", got)
	}
	if jobs := acrossJobs(got); !slices.Equal(jobs, []int{1, 4}) {
		t.Errorf("acrossJobs(%q) = %v", got, jobs)
	}
}
