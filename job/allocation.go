package job

import (
	"fmt"
	"strings"

	"prsh/job/hostrange"
)

// Allocation is the host list a batch system granted the job, and where
// it was found, for -v and --display-allocation.
type Allocation struct {
	Source string // "Slurm (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE)", …
	Hosts  []Host
	// SlurmJob is the Slurm job's id (SLURM_JOB_ID), whose steps can
	// start the daemons; "" for other batch systems, or a Slurm
	// environment without it.
	SlurmJob string
}

// DetectAllocation finds the allocation of a Slurm, PBS/Torque or LSF
// batch job from its environment, read through getenv (os.Getenv in
// mpirun); nil when there is none. The first system found wins, in that
// order. PBS_NODEFILE and LSB_DJOB_HOSTFILE are read from the file
// system: one line per slot, so a repeated name adds a slot.
func DetectAllocation(getenv func(string) string) (*Allocation, error) {
	if list := getenv("SLURM_JOB_NODELIST"); list != "" {
		hosts, err := SlurmHosts(list, getenv("SLURM_TASKS_PER_NODE"))
		a, err := allocation("Slurm (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE)", hosts, err)
		if a != nil {
			a.SlurmJob = getenv("SLURM_JOB_ID")
		}
		return a, err
	}
	if path := getenv("PBS_NODEFILE"); path != "" {
		hosts, err := ReadHostfile(path)
		return allocation("PBS (PBS_NODEFILE="+path+")", hosts, err)
	}
	if path := getenv("LSB_DJOB_HOSTFILE"); path != "" {
		hosts, err := ReadHostfile(path)
		return allocation("LSF (LSB_DJOB_HOSTFILE="+path+")", hosts, err)
	}
	if list := getenv("LSB_MCPU_HOSTS"); list != "" {
		hosts, err := LSFHosts(list)
		return allocation("LSF (LSB_MCPU_HOSTS)", hosts, err)
	}
	return nil, nil
}

func allocation(source string, hosts []Host, err error) (*Allocation, error) {
	if err != nil {
		return nil, fmt.Errorf("batch allocation from %s: %w", source, err)
	}
	return &Allocation{Source: source, Hosts: hosts}, nil
}

// SlurmHosts pairs SLURM_JOB_NODELIST ("node[001-004],login1") with
// SLURM_TASKS_PER_NODE ("2(x3),1": 2 slots on each of three nodes, then
// 1). Without tasks per node each node has one slot.
func SlurmHosts(nodeList, tasksPerNode string) ([]Host, error) {
	names, err := expandNames(nodeList)
	if err != nil {
		return nil, fmt.Errorf("SLURM_JOB_NODELIST: %w", err)
	}
	counts := make([]int, len(names))
	for i := range counts {
		counts[i] = 1
	}
	if tasksPerNode != "" {
		if counts, err = slurmCounts(tasksPerNode, len(names)); err != nil {
			return nil, fmt.Errorf("SLURM_TASKS_PER_NODE %q: %w", tasksPerNode, err)
		}
		if len(counts) != len(names) {
			return nil, fmt.Errorf("SLURM_TASKS_PER_NODE %q gives %d nodes, SLURM_JOB_NODELIST names %d",
				tasksPerNode, len(counts), len(names))
		}
	}
	var set hostSet
	for i, name := range names {
		if err := set.add(Host{Name: name, Slots: counts[i]}); err != nil {
			return nil, err
		}
	}
	return set.hosts, nil
}

// expandNames expands a comma-separated list of names and ranges, each
// name checked.
func expandNames(list string) ([]string, error) {
	entries, err := hostrange.Split(list)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		expanded, err := hostrange.Expand(strings.TrimSpace(e))
		if err != nil {
			return nil, err
		}
		for _, name := range expanded {
			if err := checkName(name); err != nil {
				return nil, err
			}
		}
		if len(names)+len(expanded) > hostrange.MaxHosts {
			return nil, fmt.Errorf("more than %d hosts", hostrange.MaxHosts)
		}
		names = append(names, expanded...)
	}
	return names, nil
}

// slurmCounts expands "2(x3),1" into 2, 2, 2, 1, refusing more than
// limit entries.
func slurmCounts(s string, limit int) ([]int, error) {
	var counts []int
	for _, item := range strings.Split(s, ",") {
		count, repeat := item, "1"
		if i := strings.IndexByte(item, '('); i >= 0 {
			inner, ok := strings.CutSuffix(item[i+1:], ")")
			if inner, ok2 := strings.CutPrefix(inner, "x"); ok && ok2 {
				count, repeat = item[:i], inner
			} else {
				return nil, fmt.Errorf("%q: want N or N(xM)", item)
			}
		}
		n, err := parseCount(count)
		if err != nil {
			return nil, fmt.Errorf("task count %w", err)
		}
		times, err := parseCount(repeat)
		if err != nil {
			return nil, fmt.Errorf("repeat count %w", err)
		}
		if len(counts)+times > limit {
			return nil, fmt.Errorf("more entries than the %d nodes", limit)
		}
		for range times {
			counts = append(counts, n)
		}
	}
	return counts, nil
}

// LSFHosts parses LSB_MCPU_HOSTS: "hostA 4 hostB 2", names and slot
// counts alternating.
func LSFHosts(s string) ([]Host, error) {
	fields := strings.Fields(s)
	if len(fields)%2 != 0 {
		return nil, fmt.Errorf("LSB_MCPU_HOSTS %q: want pairs of host and slot count", s)
	}
	var set hostSet
	for i := 0; i < len(fields); i += 2 {
		n, err := parseCount(fields[i+1])
		if err == nil {
			err = checkName(fields[i])
		}
		if err == nil {
			err = set.add(Host{Name: fields[i], Slots: n})
		}
		if err != nil {
			return nil, fmt.Errorf("LSB_MCPU_HOSTS entry %q: %w", fields[i]+" "+fields[i+1], err)
		}
	}
	if len(set.hosts) == 0 {
		return nil, fmt.Errorf("LSB_MCPU_HOSTS is empty")
	}
	return set.hosts, nil
}
