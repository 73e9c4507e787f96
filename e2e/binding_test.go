package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"prsh/testbed"
)

// The testbed's nodes share this machine, so each orted binds its ranks
// from this machine's CPUs; bigger topologies are job/binding's unit
// tests.

// showAffinity prints the rank and the CPUs the kernel lets it run on.
const showAffinity = `echo "$PRSH_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"`

// machineCores counts this machine's cores among the CPUs this test may
// use, as sysfs groups them.
func machineCores(t *testing.T) (cores int, cpus string) {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	cpus = regexp.MustCompile(`Cpus_allowed_list:\s*(\S+)`).FindStringSubmatch(string(status))[1]
	seen := map[string]bool{}
	ids, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology")
	for _, dir := range ids {
		pkg, err1 := os.ReadFile(filepath.Join(dir, "physical_package_id"))
		core, err2 := os.ReadFile(filepath.Join(dir, "core_id"))
		if err1 != nil || err2 != nil {
			t.Skip("no CPU topology in sysfs")
		}
		seen[strings.TrimSpace(string(pkg))+"/"+strings.TrimSpace(string(core))] = true
	}
	return len(seen), cpus
}

// TestBindToCore: with --bind-to core each rank runs on the CPUs of one
// core, the ranks of a node on different cores, and --report-bindings
// says so on stderr, one line per rank naming its node: the CPUs a rank's
// line names are the ones the kernel lets it use.
func TestBindToCore(t *testing.T) {
	cores, all := machineCores(t)
	if cores < 2 {
		t.Skip("one core: nothing to tell bound from unbound")
	}
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	res := mpirun(t, c, "-np", "4", "--bind-to", "core", "--report-bindings", "sh", "-c", showAffinity)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	reported := map[string]string{} // rank → cpus
	coreOf := map[string]string{}
	line := regexp.MustCompile(`^mpirun: (node00[12]): rank (\d) bound to core (\d+) of socket \d+ \(cpus (\S+)\)$`)
	for _, l := range lines(res.stderr) {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("stderr line %q is not a binding report; stderr:\n%s", l, res.stderr)
		}
		if want := fmt.Sprintf("node00%d", rankNode(m[2])); m[1] != want {
			t.Errorf("rank %s reported on %s, runs on %s", m[2], m[1], want)
		}
		key := m[1] + " core " + m[3]
		if other, ok := coreOf[key]; ok {
			t.Errorf("ranks %s and %s share %s", other, m[2], key)
		}
		coreOf[key], reported[m[2]] = m[2], m[4]
	}
	if len(reported) != 4 {
		t.Fatalf("%d report lines, want 4:\n%s", len(reported), res.stderr)
	}
	for _, l := range lines(res.stdout) {
		rank, cpus, _ := strings.Cut(l, " ")
		if cpus != reported[rank] || cpus == all {
			t.Errorf("rank %s runs on cpus %s, reported %s (the machine: %s)", rank, cpus, reported[rank], all)
		}
	}
}

// rankNode is the node of rank r in TestBindToCore's map (2 slots each).
func rankNode(r string) int { return int(r[0]-'0')/2 + 1 }

// TestBindMoreRanksThanCores: more ranks than cores on a node with
// --bind-to core is an error naming the node and the counts, as in Open
// MPI, unless overload is allowed; --bind-to socket binds to every CPU of
// the socket; --report-bindings alone says the ranks are not bound.
func TestBindMoreRanksThanCores(t *testing.T) {
	cores, all := machineCores(t)
	c := cluster(t, testbed.Config{Nodes: 1})
	np := fmt.Sprint(cores + 1)
	host := "node001:" + np
	res := mpirun(t, c, "-H", host, "--bind-to", "core", "sh", "-c", showAffinity)
	if res.status != 255 || res.stdout != "" {
		t.Errorf("exit %d, want 255; stdout:\n%s", res.status, res.stdout)
	}
	checkMpirunLine(t, res.stderr, fmt.Sprintf(`^mpirun: node001: rank \d+: cannot bind: %s ranks but %d cores to bind them to \(--bind-to core\)`, np, cores))

	res = mpirun(t, c, "-H", host, "--bind-to", "core:overload-allowed", "sh", "-c", showAffinity)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("overload allowed: exit %d; stderr:\n%s", res.status, res.stderr)
	}
	var cpus []string
	for _, l := range lines(res.stdout) {
		_, set, _ := strings.Cut(l, " ")
		cpus = append(cpus, set)
	}
	if slices.Sort(cpus); len(cpus) != cores+1 || slices.Index(cpus, all) >= 0 && cores > 1 {
		t.Errorf("overloaded ranks on %v, want one core each (the machine: %s)", cpus, all)
	}

	res = mpirun(t, c, "-H", host, "-np", fmt.Sprint(cores), "--bind-to", "socket", "--map-by", "socket", "--report-bindings", "sh", "-c", showAffinity)
	if res.status != 0 {
		t.Fatalf("socket: exit %d; stderr:\n%s", res.status, res.stderr)
	}
	socketLine := regexp.MustCompile(`^mpirun: node001: rank (\d+) bound to socket \d+ \(cpus (\S+)\)$`)
	var want []string
	for _, l := range lines(res.stderr) {
		m := socketLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("socket: stderr line %q is not a binding report", l)
		}
		want = append(want, m[1]+" "+m[2])
	}
	if len(want) != cores {
		t.Errorf("socket: %d report lines, want %d:\n%s", len(want), cores, res.stderr)
	}
	wantSet(t, res.stdout, want...)

	res = mpirun(t, c, "-np", "1", "--report-bindings", "sh", "-c", showAffinity)
	if res.status != 0 || res.stdout != "0 "+all+"\n" {
		t.Errorf("unbound: exit %d, stdout %q, want the machine's cpus %s", res.status, res.stdout, all)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node001: rank 0 is not bound$`)
}

// TestBindCoresPerRank: a rank of several cores (Open MPI's --map-by
// slot:PE=N, its --cpus-per-rank, Hydra's -bind-to core:N) takes N slots
// and runs on N cores, which --report-bindings names; the slots that do
// not hold such ranks, and a binding that contradicts it, are errors.
func TestBindCoresPerRank(t *testing.T) {
	cores, all := machineCores(t)
	if cores < 2 {
		t.Skip("one core: a rank cannot have two")
	}
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	for _, spelling := range [][]string{
		{"--map-by", "slot:PE=2"}, {"--cpus-per-rank", "2"}, {"-bind-to", "core:2"},
	} {
		res := mpirun(t, c, append(spelling, "--report-bindings", "sh", "-c", showAffinity)...)
		if res.status != 0 {
			t.Fatalf("%v: exit %d; stderr:\n%s", spelling, res.status, res.stderr)
		}
		reported := regexp.MustCompile(`^mpirun: node00([12]): rank (\d) bound to cores (\d+)-(\d+) of socket \d+ \(cpus (\S+)\)$`)
		got := map[string]string{}
		for _, l := range lines(res.stderr) {
			m := reported.FindStringSubmatch(l)
			if m == nil || m[1] != fmt.Sprint(m[2][0]-'0'+1) || m[4] != fmt.Sprint(m[3][0]-'0'+1) {
				t.Fatalf("%v: stderr line %q is not rank r on node r+1 bound to two cores; stderr:\n%s", spelling, l, res.stderr)
			}
			got[m[2]] = m[5]
		}
		// Two slots a node make one rank of two cores a node.
		if len(got) != 2 {
			t.Fatalf("%v: %d ranks reported, want 2:\n%s", spelling, len(got), res.stderr)
		}
		wantSet(t, res.stdout, "0 "+got["0"], "1 "+got["1"])
		if cores == 2 && got["0"] != all {
			t.Errorf("%v: rank 0 on cpus %s, want the machine's two cores (%s)", spelling, got["0"], all)
		}
	}
	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"--map-by", "node:PE=2", "-np", "3"}, `^mpirun: 3 ranks of PE=2 take 6 slots, more than the 4 slots available; use --oversubscribe to allow it`},
		{[]string{"--map-by", "slot:PE=2", "--bind-to", "socket"}, `^mpirun: --map-by slot:PE=2 binds each rank to 2 cores: use --bind-to core, or leave --bind-to out`},
		{[]string{"--map-by", "slot:PE=2", "--cpus-per-rank", "3"}, `^mpirun: --cpus-per-rank 3 and --map-by slot:PE=2 disagree on the cores per rank`},
		{[]string{"--map-by", "slot:PE=0"}, `^mpirun: --map-by "slot:PE=0": PE=0: want a count of cores of at least 1`},
	} {
		res := mpirun(t, c, append(tc.args, "true")...)
		if res.status != statusUsage {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", tc.args, res.status, statusUsage, res.stderr)
		}
		checkOneLine(t, res.stderr, tc.line)
	}
}

// TestBindToEveryUnit: --bind-to hwthread gives each rank one CPU of its
// own; l3cache, numa and board give it every CPU of the unit that holds
// its core, as sysfs groups them; the kernel's affinity of each rank is
// what its --report-bindings line says.
func TestBindToEveryUnit(t *testing.T) {
	cores, all := machineCores(t)
	if cores < 2 {
		t.Skip("one core: nothing to tell bound from unbound")
	}
	c := cluster(t, testbed.Config{Nodes: 1, Slots: 2})
	for _, tc := range []struct{ unit, line string }{
		{"hwthread", `a hardware thread of core \d+ of socket \d+ \(cpu (\d+)\)`},
		{"l3cache", `L3 cache \d+ \(cpus (\S+)\)`},
		{"numa", `NUMA node \d+ \(cpus (\S+)\)`},
		{"board", `the board \(cpus (\S+)\)`},
	} {
		if tc.unit == "l3cache" {
			if l3, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index3"); len(l3) == 0 {
				continue // no L3 cache in sysfs: binding to one fails, by design
			}
		}
		res := mpirun(t, c, "-np", "2", "--bind-to", tc.unit, "--report-bindings", "sh", "-c", showAffinity)
		if res.status != 0 {
			t.Fatalf("%s: exit %d; stderr:\n%s", tc.unit, res.status, res.stderr)
		}
		line := regexp.MustCompile(`^mpirun: node001: rank (\d) bound to ` + tc.line + `$`)
		var want []string
		for _, l := range lines(res.stderr) {
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: stderr line %q is not a binding report", tc.unit, l)
			}
			want = append(want, m[1]+" "+m[2])
		}
		if len(want) != 2 {
			t.Fatalf("%s: %d report lines, want 2:\n%s", tc.unit, len(want), res.stderr)
		}
		wantSet(t, res.stdout, want...)
		switch _, cpus0, _ := strings.Cut(want[0], " "); {
		case tc.unit == "hwthread" && want[0][2:] == want[1][2:]:
			t.Errorf("hwthread: ranks share cpu %s", cpus0)
		case tc.unit == "board" && cpus0 != all:
			t.Errorf("board: rank on %s, want the machine's %s", cpus0, all)
		}
	}
}
