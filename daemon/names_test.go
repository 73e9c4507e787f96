package daemon

import (
	"errors"
	"maps"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// The name functions the PMI servers call, at mpirun, whose ranks'
// requests are served within the call: each done runs once, with the
// answer or the error its caller tells apart with errors.Is.
func TestNameFunctions(t *testing.T) {
	d := bareMpirun(t, hclog.NewNullLogger())
	expect := func(what string, want error) func(error) {
		return func(err error) {
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", what, err, want)
			}
		}
	}
	var found []map[string]string
	var errs []error
	lookup := func(values map[string]string, err error) { found, errs = append(found, values), append(errs, err) }

	d.publishNames(0, 1, map[string]string{"svc": "port-1", "other": "o"}, expect("publish", nil))
	d.publishNames(0, 2, map[string]string{"svc": "port-2"}, expect("publish of a name taken", errNameDuplicate))
	d.unpublishNames(0, 2, []string{"svc"}, expect("unpublish of another rank's name", errNameNotFound))
	d.lookupNames(0, 0, []string{"svc", "missing"}, false, lookup)
	d.lookupNames(0, 0, []string{"later"}, true, lookup)
	if len(found) != 1 || !maps.Equal(found[0], map[string]string{"svc": "port-1"}) || errs[0] != nil {
		t.Fatalf("lookups answered: %v %v; want the first, with svc only", found, errs)
	}
	d.publishNames(0, 1, map[string]string{"later": "l"}, expect("publish", nil))
	if len(found) != 2 || found[1]["later"] != "l" || errs[1] != nil {
		t.Fatalf("the lookup that waits, once its name came: %v %v", found, errs)
	}
	d.unpublishNames(0, 1, nil, expect("unpublish of all", nil))
	d.lookupNames(0, 0, []string{"svc"}, false, lookup)
	if !errors.Is(errs[2], errNameNotFound) {
		t.Errorf("lookup after unpublish: %v %v", found[2], errs[2])
	}
	d.lookupNames(0, 0, []string{"never"}, true, lookup)
	d.releaseNames(0)
	if len(errs) != 4 || !errors.Is(errs[3], errNameJobEnded) {
		t.Errorf("a lookup waiting when its job is let go of: %v", errs)
	}
}
