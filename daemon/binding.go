package daemon

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"prsh/job/binding"
)

// sysCPU is where Linux describes each CPU's core and socket.
const sysCPU = "/sys/devices/system/cpu"

// nodeCPUs lists the CPUs this orted may run on (its affinity: the node's,
// or what a batch system's cpuset left the job), each with its core and
// socket. A CPU whose topology sysfs does not give counts as a core of
// its own on socket 0.
func nodeCPUs() ([]binding.CPU, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []binding.CPU
	for id := 0; len(cpus) < set.Count(); id++ {
		if set.IsSet(id) {
			core, err := topologyID(id, "core_id")
			if err != nil {
				core = id
			}
			socket, _ := topologyID(id, "physical_package_id")
			cpus = append(cpus, binding.CPU{ID: id, Core: core, Socket: max(socket, 0)})
		}
	}
	return cpus, nil
}

func topologyID(cpu int, name string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/cpu%d/topology/%s", sysCPU, cpu, name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
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
		return nil, fmt.Errorf("cannot bind: %w", err)
	}
	return b, nil
}

// bindingLine is the rank's line for --report-bindings.
func (d *Daemon) bindingLine(r *rank) string {
	if r.bound.CPUs == nil {
		return fmt.Sprintf("mpirun: %s: rank %d is not bound\n", d.cfg.Node, r.id)
	}
	return fmt.Sprintf("mpirun: %s: rank %d bound to %s\n", d.cfg.Node, r.id, r.bound)
}
