package ranks

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"prsh/job/binding"
)

// sysCPU is where Linux describes each CPU's core and socket.
const sysCPU = "/sys/devices/system/cpu"

// sysNode is where Linux lists the CPUs of each NUMA node.
const sysNode = "/sys/devices/system/node"

// nodeCPUs lists the CPUs this orted may run on (its affinity: the node's,
// or what taskset or a batch system left the job, within its cpuset
// cgroup), each with its core, socket, NUMA node and L3 cache. A CPU
// whose topology sysfs does not give counts as a core of its own on
// socket 0; without NUMA nodes in sysfs (a kernel without NUMA) every CPU
// is on node 0.
func nodeCPUs() ([]binding.CPU, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	numa := numaNodes()
	var cpus []binding.CPU
	for id := 0; len(cpus) < set.Count(); id++ {
		if set.IsSet(id) {
			core, err := topologyID(id, "core_id")
			if err != nil {
				core = id
			}
			socket, _ := topologyID(id, "physical_package_id")
			cpus = append(cpus, binding.CPU{ID: id, Core: core, Socket: max(socket, 0), NUMA: numa[id], L3: l3Cache(id)})
		}
	}
	return binding.Within(cpus, cpusetCPUs()), nil
}

// usableCPUs counts the CPUs this daemon's ranks may run on: nodeCPUs'
// set, without its topology; 0 when the affinity cannot be read.
func usableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0
	}
	within := cpusetCPUs()
	if within == nil {
		return set.Count()
	}
	n := 0
	for _, id := range within {
		if set.IsSet(id) {
			n++
		}
	}
	return n
}

// numaNodes maps each CPU to its NUMA node, from each node's cpulist.
func numaNodes() map[int]int {
	node := map[int]int{}
	dirs, _ := filepath.Glob(sysNode + "/node[0-9]*")
	for _, dir := range dirs {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		b, err2 := os.ReadFile(filepath.Join(dir, "cpulist"))
		ids, err3 := binding.ParseList(string(b))
		if err != nil || err2 != nil || err3 != nil {
			continue
		}
		for _, id := range ids {
			node[id] = n
		}
	}
	return node
}

// l3Cache is the id of the L3 cache that cpu uses: the cache entry of
// level 3 in sysfs, by its id, else by the first CPU that shares it; -1
// when sysfs lists none.
func l3Cache(cpu int) int {
	dirs, _ := filepath.Glob(fmt.Sprintf("%s/cpu%d/cache/index[0-9]*", sysCPU, cpu))
	for _, dir := range dirs {
		if level, err := readInt(filepath.Join(dir, "level")); err != nil || level != 3 {
			continue
		}
		if id, err := readInt(filepath.Join(dir, "id")); err == nil {
			return id
		}
		b, err := os.ReadFile(filepath.Join(dir, "shared_cpu_list"))
		if ids, err2 := binding.ParseList(string(b)); err == nil && err2 == nil && len(ids) > 0 {
			return ids[0]
		}
	}
	return -1
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func topologyID(cpu int, name string) (int, error) {
	return readInt(fmt.Sprintf("%s/cpu%d/topology/%s", sysCPU, cpu, name))
}

// bindRanks decides where each of this node's ranks runs; a rank that
// cannot be bound must not start (a silent unbound run is what the user
// did not ask for).
func bindRanks(p binding.Policy, ranks int) ([]binding.Binding, error) {
	if p.Unit == binding.None {
		return make([]binding.Binding, ranks), nil
	}
	cpus, err := nodeCPUs()
	if err != nil {
		return nil, fmt.Errorf("cannot bind: %w", err)
	}
	b, err := binding.Bind(cpus, ranks, p)
	if err != nil {
		return nil, fmt.Errorf("cannot bind: %w; the job may use cpus %s here", err, binding.List(binding.IDs(cpus)))
	}
	return b, nil
}

// bindingLine is the rank's line for --report-bindings.
func bindingLine(node string, rank int, bound binding.Binding) string {
	if bound.CPUs == nil {
		return fmt.Sprintf("mpirun: %s: rank %d is not bound\n", node, rank)
	}
	return fmt.Sprintf("mpirun: %s: rank %d bound to %s\n", node, rank, bound)
}
